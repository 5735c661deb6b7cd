package procwire

// A process on the server: its streams, signals, its end.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"
)

type state int

const (
	starting state = iota
	running
	exited
	released
)

// Process is a process the server holds for the client.
type Process struct {
	c   *Client
	id  uint32
	pty bool
	// The rest is under c.mu.
	pid       int
	state     state
	exit      Exit
	startErr  error
	abandoned bool // its start's caller gave up: kill it once it starts
	releasing bool
	// stdin says it was started with stdin; stdinCredit is what the
	// server takes now, stdinClosed that the client closed it.
	stdin       bool
	stdinCredit int
	stdinClosed bool
	out         [3]stream // [Stdout], [Stderr]
}

// stream is an output stream's bytes received and not yet read. Its
// credit, its unread bytes and its read bytes not yet granted again add
// up to the client's Window.
type stream struct {
	data    []byte
	off     int
	credit  int
	pending int
	eof     bool
}

func (c *Client) newProcess(id uint32, pty, stdin bool) *Process {
	p := &Process{c: c, id: id, pty: pty, stdin: stdin}
	p.out[Stdout].credit = c.lim.Window
	p.out[Stderr].credit = c.lim.Window
	p.out[Stderr].eof = pty
	return p
}

// ID is the process's id on the channel, the client's.
func (p *Process) ID() uint32 { return p.id }

// PID is its PID in the server's PID namespace.
func (p *Process) PID() int {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.pid
}

// takeOut takes an out frame's data, within the stream's credit.
func (p *Process) takeOut(s byte, b []byte) error {
	if s != Stdout && s != Stderr || p.out[s].eof {
		return violation("output on process %d's stream %d, which has ended or does not exist", p.id, s)
	}
	st := &p.out[s]
	if len(b) > st.credit {
		return violation("%d bytes on process %d's stream %d, beyond its credit of %d", len(b), p.id, s, st.credit)
	}
	st.credit -= len(b)
	// The buffer grows as output comes, to the window at most (the
	// credit keeps what is unread within it), not to it at once: most
	// commands write little.
	if len(st.data)+len(b) > cap(st.data) {
		unread := len(st.data) - st.off
		if need := unread + len(b); need <= cap(st.data) {
			st.data = st.data[:copy(st.data, st.data[st.off:])]
		} else {
			grown := make([]byte, unread, min(max(2*cap(st.data), need, 4096), p.c.lim.Window))
			copy(grown, st.data[st.off:])
			st.data = grown
		}
		st.off = 0
	}
	st.data = append(st.data, b...)
	return nil
}

// Stdout reads the process's output (its terminal's, on a PTY); each
// read returns credit to the server. Output not read stops the process
// once Window is unread.
func (p *Process) Stdout() io.Reader { return reader{p, Stdout} }

// Stderr reads its error output; end of file at once on a PTY.
func (p *Process) Stderr() io.Reader { return reader{p, Stderr} }

type reader struct {
	p *Process
	s int
}

func (r reader) Read(b []byte) (int, error) {
	p, c := r.p, r.p.c
	c.mu.Lock()
	st := &p.out[r.s]
	for len(st.data) == st.off && !st.eof && c.err == nil && p.state != released {
		c.cond.Wait()
	}
	if len(st.data) == st.off {
		err := c.err
		if st.eof || p.state == released {
			err = io.EOF
		}
		c.mu.Unlock()
		return 0, err
	}
	n := copy(b, st.data[st.off:])
	st.off += n
	if st.off == len(st.data) {
		st.data, st.off = st.data[:0], 0
	}
	st.pending += n
	grant := 0
	// Credit goes back in batches, or when all is read.
	if !st.eof && p.state != released && (st.pending >= c.lim.Window/4 || len(st.data) == 0) {
		grant, st.pending = st.pending, 0
		st.credit += grant
	}
	c.mu.Unlock()
	if grant > 0 {
		var g [4]byte
		binary.LittleEndian.PutUint32(g[:], uint32(grant))
		_ = c.send(kindCredit, byte(r.s), p.id, g[:]) // a broken channel says so on the next read
	}
	return n, nil
}

// ErrEnded: the process has ended, its stdin with it.
var ErrEnded = errors.New("the process has ended")

// Stdin writes to the process's stdin, waiting for credit; Close ends it
// (the process reads end of file; on a terminal, nothing changes).
func (p *Process) Stdin() io.WriteCloser { return stdinWriter{p} }

type stdinWriter struct{ p *Process }

func (w stdinWriter) Write(b []byte) (int, error) {
	p, c := w.p, w.p.c
	if !p.stdin {
		return 0, errors.New("writing to stdin: the process was started without stdin")
	}
	written := 0
	for len(b) > 0 {
		c.mu.Lock()
		for p.stdinCredit == 0 && c.err == nil && p.state == running && !p.stdinClosed {
			c.cond.Wait()
		}
		var err error
		switch {
		case c.err != nil:
			err = c.err
		case p.stdinClosed:
			err = errors.New("writing to stdin: it is closed")
		case p.state != running:
			err = fmt.Errorf("writing to stdin: %w", ErrEnded)
		}
		if err != nil {
			c.mu.Unlock()
			return written, err
		}
		n := min(len(b), p.stdinCredit, MaxIn-HeaderLen)
		p.stdinCredit -= n
		c.mu.Unlock()
		if err := c.send(kindStdin, 0, p.id, b[:n]); err != nil {
			return written, err
		}
		written += n
		b = b[n:]
	}
	return written, nil
}

func (w stdinWriter) Close() error {
	p, c := w.p, w.p.c
	c.mu.Lock()
	if p.stdinClosed || !p.stdin {
		c.mu.Unlock()
		return nil
	}
	p.stdinClosed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return c.send(kindStdinClose, 0, p.id, nil)
}

// Signal sends sig to the process, or to its process group (which it
// leads, and which outlives it while a member lives). A signal to a
// process that has ended goes nowhere.
func (p *Process) Signal(sig syscall.Signal, group bool) error {
	if sig <= 0 || sig >= 65 {
		return fmt.Errorf("signalling process %d: no signal %d", p.id, sig)
	}
	var b [5]byte
	binary.LittleEndian.PutUint32(b[:], uint32(sig))
	if group {
		b[4] = 1
	}
	return p.c.send(kindSignal, 0, p.id, b[:])
}

// Resize changes the size of the process's terminal.
func (p *Process) Resize(s Size) error {
	if !p.pty {
		return fmt.Errorf("resizing process %d: it has no terminal", p.id)
	}
	var b [4]byte
	binary.LittleEndian.PutUint16(b[:], s.Rows)
	binary.LittleEndian.PutUint16(b[2:], s.Cols)
	return p.c.send(kindResize, 0, p.id, b[:])
}

// Wait waits for the process's end.
func (p *Process) Wait(ctx context.Context) (Exit, error) {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for p.state == running && c.err == nil {
		if err := c.waitLocked(ctx); err != nil {
			return Exit{}, fmt.Errorf("waiting for process %d: %w", p.id, err)
		}
	}
	if p.state < exited {
		return Exit{}, c.err
	}
	return p.exit, nil
}

// Release tells the server to forget the ended process, and the client
// with it, once the server says it has: its output not yet read is
// dropped. Until then it counts against MaxProcs.
func (p *Process) Release(ctx context.Context) error {
	c := p.c
	c.mu.Lock()
	if p.state != exited {
		c.mu.Unlock()
		if p.state == released {
			return nil
		}
		return fmt.Errorf("releasing process %d: it has not ended", p.id)
	}
	p.releasing = true
	c.mu.Unlock()
	if err := c.send(kindRelease, 0, p.id, nil); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p.state != released && c.err == nil {
		if err := c.waitLocked(ctx); err != nil {
			return fmt.Errorf("releasing process %d: %w", p.id, err)
		}
	}
	if p.state != released {
		return c.err
	}
	p.out[Stdout], p.out[Stderr] = stream{eof: true}, stream{eof: true}
	return nil
}

// Info is what the client knows of a process now.
type Info struct {
	// ID is the process's id on the channel.
	ID uint32
	// PID is its PID in the server's PID namespace.
	PID int
	// PTY says it runs on a terminal.
	PTY bool
	// Stdin says its stdin is open for Stdin to write.
	Stdin bool
	// Exited says it has ended, as Exit says.
	Exited bool
	Exit   Exit
}

// Info says what the client knows of the process now.
func (p *Process) Info() Info {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return Info{ID: p.id, PID: p.pid, PTY: p.pty, Stdin: p.stdin && !p.stdinClosed, Exited: p.state >= exited, Exit: p.exit}
}
