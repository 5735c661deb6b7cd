package procwire

// A client's channel: hello and the resync, the frames in, starting.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Limits bound what a client takes from its server. Zero fields take
// their defaults.
type Limits struct {
	// Window is the output a stream may have in flight and unread, its
	// credit (default 256 KiB, at most 16 MiB).
	Window int
	// MaxProcs is the most processes the client holds at once, running
	// or not yet released (default 64, at most ServerMaxProcs).
	MaxProcs int
	// ResyncBytes is the most of the server's output Hello discards
	// before it finds its reply (default 64 MiB).
	ResyncBytes int64
}

func (l Limits) normal() Limits {
	if l.Window <= 0 {
		l.Window = 256 << 10
	}
	l.Window = min(l.Window, 16<<20)
	if l.MaxProcs <= 0 {
		l.MaxProcs = 64
	}
	l.MaxProcs = min(l.MaxProcs, ServerMaxProcs)
	if l.ResyncBytes <= 0 {
		l.ResyncBytes = 64 << 20
	}
	return l
}

// Client is one end of a channel to a server: the server's stdout is r,
// its stdin w. Its memory is bounded by Limits: Window for each stream of
// MaxProcs processes, and a frame.
type Client struct {
	r   io.Reader
	w   io.Writer
	lim Limits

	// wmu keeps each frame one Write.
	wmu sync.Mutex

	mu     sync.Mutex
	cond   *sync.Cond
	procs  map[uint32]*Process
	next   uint32
	hello  bool // Hello was called
	ready  bool // its reply came: ids past the adopted ones are free
	err    error
	broken chan struct{}
}

// New returns a client of the server whose output is r and input w. It
// sends nothing until Hello. The caller owns r and w: closing r ends
// the client's reading.
func New(r io.Reader, w io.Writer, lim Limits) *Client {
	c := &Client{r: r, w: w, lim: lim.normal(), procs: map[uint32]*Process{}, broken: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Err is why the channel broke, nil while it works.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Broken is closed when the channel breaks. The client then reads and
// writes no more: its owner should close r and w (end the server), as a
// server left blocked writing to it would block a write still under way.
func (c *Client) Broken() <-chan struct{} { return c.broken }

// Close stops the client: its calls fail from now on. It leaves r and w
// to their owner.
func (c *Client) Close() error {
	c.fail(errors.New("the process server's client is closed"))
	return nil
}

// fail breaks the channel with err, once.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

func (c *Client) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	close(c.broken)
	c.cond.Broadcast()
}

// waitLocked waits for c.cond, or for ctx's end, which it returns.
func (c *Client) waitLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	c.cond.Wait()
	stop()
	return ctx.Err()
}

// send writes one frame.
func (c *Client) send(kind, stream byte, id uint32, payload []byte) error {
	if HeaderLen+len(payload) > MaxIn {
		return fmt.Errorf("a frame of %d bytes, more than %d", HeaderLen+len(payload), MaxIn)
	}
	var b [MaxIn]byte
	header(b[:], kind, stream, id, len(payload))
	n := copy(b[HeaderLen:], payload)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.Err(); err != nil {
		return err
	}
	if _, err := c.w.Write(b[:HeaderLen+n]); err != nil {
		err = fmt.Errorf("writing to the process server: %w", err)
		c.fail(err)
		return err
	}
	return nil
}

// Hello takes the channel over: it sends a hello with a fresh nonce,
// discards the server's output up to the reply that carries it (a dead
// client's frames, or half of one), and returns the processes the server
// holds, each as it is now, their output credit reset to Window. A
// client says hello once, before anything else.
func (c *Client) Hello(ctx context.Context) ([]*Process, error) {
	c.mu.Lock()
	if c.hello {
		c.mu.Unlock()
		return nil, errors.New("saying hello to the process server: said already")
	}
	c.hello = true
	c.mu.Unlock()
	var p [helloLen]byte
	if _, err := rand.Read(p[:nonceLen]); err != nil {
		return nil, fmt.Errorf("saying hello to the process server: %w", err)
	}
	binary.LittleEndian.PutUint32(p[nonceLen:], uint32(c.lim.Window))
	if err := c.send(kindHello, 0, 0, p[:]); err != nil {
		return nil, err
	}
	type result struct {
		procs []*Process
		err   error
	}
	done := make(chan result, 1)
	go func() {
		entries, rest, err := c.resync(p[:nonceLen])
		if err != nil {
			c.fail(err)
			done <- result{err: err}
			return
		}
		procs := c.adopt(entries)
		done <- result{procs: procs}
		c.loop(rest)
	}()
	select {
	case res := <-done:
		return res.procs, res.err
	case <-ctx.Done():
		err := fmt.Errorf("waiting for the process server's hello-reply: %w", ctx.Err())
		c.fail(err)
		return nil, err
	}
}

// resync reads the server's output until the hello-reply with nonce, and
// returns what it lists and a reader of what follows it.
func (c *Client) resync(nonce []byte) ([]entry, io.Reader, error) {
	// The reply's header and nonce: what the length is, the rest is known.
	want := append([]byte{kindHelloReply, 0, 0, 0, 0, 0, 0, 0}, nonce...)
	buf := make([]byte, 0, 64<<10)
	var discarded int64
	for {
		if i := replyAt(buf, want); i >= 0 {
			h := buf[i : i+HeaderLen]
			rest := io.MultiReader(bytes.NewReader(buf[i+HeaderLen:]), c.r)
			body := make([]byte, MaxPayload)
			f, err := readPayload(rest, h, body)
			if err != nil {
				return nil, nil, err
			}
			entries, err := decodeHelloReply(f.payload, c.lim.MaxProcs)
			if err != nil {
				return nil, nil, err
			}
			return entries, rest, nil
		}
		// Keep what could be the start of the reply.
		if keep := len(want) + 4 - 1; len(buf) > keep {
			discarded += int64(len(buf) - keep)
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if discarded > c.lim.ResyncBytes {
			return nil, nil, violation("no hello-reply in the first %d bytes of the server's output", discarded)
		}
		n, err := c.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil && n == 0 {
			return nil, nil, readErr(err)
		}
	}
}

// replyAt is where in buf the frame starts whose header and nonce (after
// its length) are want, -1 when it is not there whole.
func replyAt(buf, want []byte) int {
	for off := 0; ; {
		j := bytes.Index(buf[off:], want)
		if j < 0 {
			return -1
		}
		if i := off + j - 4; i >= 0 {
			return i
		}
		off += j + 1
	}
}

// adopt makes the processes a hello-reply lists the client's.
func (c *Client) adopt(entries []entry) []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	procs := make([]*Process, 0, len(entries))
	for _, e := range entries {
		p := c.newProcess(e.id, e.flags&entryPTY != 0, e.flags&entryStdin != 0)
		p.pid = int(e.pid)
		p.state = running
		if e.flags&entryExited != 0 {
			p.state, p.exit = exited, e.exit
		}
		p.out[Stdout].eof = e.flags&entryStdout == 0
		p.out[Stderr].eof = e.flags&entryStderr == 0
		p.stdinCredit = int(e.stdinCredit)
		c.procs[e.id] = p
		c.next = max(c.next, e.id)
		procs = append(procs, p)
	}
	c.ready = true
	return procs
}

// loop reads the server's frames until the channel breaks.
func (c *Client) loop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, MaxPayload)
	for {
		f, err := readFrame(br, buf)
		if err == nil {
			err = c.dispatch(f)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// dispatch acts on one of the server's frames.
func (c *Client) dispatch(f frame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	switch f.kind {
	case kindHelloReply:
		return violation("a hello-reply nobody asked for")
	case kindStarted, kindStartFailed, kindOut, kindEOF, kindExit, kindStdinCredit, kindReleased:
	default:
		return violation("a frame of unknown kind %#x", f.kind)
	}
	p := c.procs[f.id]
	if p == nil {
		return violation("a frame of kind %#x for process %d, which this client did not start", f.kind, f.id)
	}
	if f.stream != 0 && f.kind != kindOut && f.kind != kindEOF {
		return violation("a frame of kind %#x with stream %d", f.kind, f.stream)
	}
	if p.state == starting && f.kind != kindStarted && f.kind != kindStartFailed {
		return violation("a frame of kind %#x for process %d before it started", f.kind, f.id)
	}
	defer c.cond.Broadcast()
	switch f.kind {
	case kindStarted:
		if p.state != starting || len(f.payload) != 4 {
			return violation("a started for process %d, which is not starting or in %d bytes", f.id, len(f.payload))
		}
		pid := binary.LittleEndian.Uint32(f.payload)
		if pid == 0 || pid > 1<<22 {
			return violation("process %d started with PID %d", f.id, pid)
		}
		p.pid, p.state = int(pid), running
		if p.abandoned {
			go p.Signal(9, true) //nolint:errcheck // nobody waits for it: best effort
		}
	case kindStartFailed:
		if p.state != starting || len(f.payload) < 4 {
			return violation("a start-failed for process %d, which is not starting", f.id)
		}
		p.startErr = &StartError{ID: p.id, Errno: binary.LittleEndian.Uint32(f.payload), Message: printable(f.payload[4:], 300)}
		delete(c.procs, f.id)
	case kindOut:
		return p.takeOut(f.stream, f.payload)
	case kindEOF:
		if f.stream != Stdout && f.stream != Stderr || p.out[f.stream].eof || len(f.payload) != 0 {
			return violation("an eof of process %d's stream %d, which has ended or does not exist", f.id, f.stream)
		}
		p.out[f.stream].eof = true
	case kindExit:
		if p.state == exited {
			return violation("a second exit for process %d", f.id)
		}
		x, err := decodeExit(f.payload)
		if err != nil {
			return err
		}
		p.state, p.exit = exited, x
		if p.abandoned {
			go p.Release(context.Background()) //nolint:errcheck // nobody holds it: best effort
		}
	case kindStdinCredit:
		if !p.stdin || len(f.payload) != 4 {
			return violation("stdin credit for process %d, which has no stdin", f.id)
		}
		n := binary.LittleEndian.Uint32(f.payload)
		if int64(p.stdinCredit)+int64(n) > StdinWindow {
			return violation("stdin credit for process %d beyond its window of %d", f.id, StdinWindow)
		}
		p.stdinCredit += int(n)
	case kindReleased:
		if !p.releasing || len(f.payload) != 0 {
			return violation("a release of process %d, which was not released", f.id)
		}
		delete(c.procs, f.id)
		p.state = released
	}
	return nil
}

// printable is at most max bytes of b, each control byte or non-ASCII
// byte as '?': a message from the server goes into logs.
func printable(b []byte, max int) string {
	b = b[:min(len(b), max)]
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch < 0x20 || ch > 0x7e {
			ch = '?'
		}
		out[i] = ch
	}
	return string(out)
}

// StartError is a server's refusal to start a process.
type StartError struct {
	// ID is the id the start took: no other process gets it.
	ID uint32
	// Errno is the server's errno.
	Errno uint32
	// Message says why, in the server's words.
	Message string
}

func (e *StartError) Error() string { return "starting a process: " + e.Message }

// Start starts a process and returns it once it runs.
func (c *Client) Start(ctx context.Context, s Spec) (*Process, error) {
	spec, err := encodeSpec(s)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return nil, errors.New("starting a process: say hello to the process server first")
	}
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	if len(c.procs) >= c.lim.MaxProcs {
		c.mu.Unlock()
		return nil, fmt.Errorf("starting a process: %d are held, the most there may be: release ended ones first", c.lim.MaxProcs)
	}
	c.next++
	p := c.newProcess(c.next, s.PTY != nil, s.Stdin)
	c.procs[p.id] = p
	c.mu.Unlock()

	// The parts go out back to back: the server keeps one start's parts.
	c.wmu.Lock()
	for len(spec) > 0 {
		n := min(len(spec), MaxIn-HeaderLen)
		kind := byte(kindSpec)
		if n == len(spec) {
			kind = kindStart
		}
		var b [MaxIn]byte
		header(b[:], kind, 0, p.id, n)
		copy(b[HeaderLen:], spec[:n])
		if _, err = c.w.Write(b[:HeaderLen+n]); err != nil {
			break
		}
		spec = spec[n:]
	}
	c.wmu.Unlock()
	if err != nil {
		err = fmt.Errorf("writing to the process server: %w", err)
		c.fail(err)
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for p.state == starting && p.startErr == nil && c.err == nil {
		if err := c.waitLocked(ctx); err != nil {
			p.abandoned = true
			return nil, fmt.Errorf("starting a process: %w", err)
		}
	}
	switch {
	case p.startErr != nil:
		return nil, p.startErr
	case p.state == starting:
		return nil, c.err
	}
	return p, nil
}
