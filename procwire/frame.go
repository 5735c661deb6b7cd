// Package procwire speaks to boxer-procd, a session's process server
// (init/boxer-procd.c; docs/internals.md, "The process server"), from the
// host: it starts processes, relays their stdin and output with credit,
// and reports their ends, and it treats the server as hostile: every
// frame, count and buffer it reads is bounded, and anything out of
// protocol breaks the channel with an error that says what.
package procwire

// The frames on the channel, their kinds and their payloads.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A frame is a header and a payload. The header: the payload's length
// (32-bit little-endian), the kind, a stream, two zero bytes and a
// process's id (32-bit little-endian; 0 for the channel's own frames).
const (
	// HeaderLen is a frame header's length.
	HeaderLen = 12
	// MaxPayload bounds a server's frame's payload.
	MaxPayload = 32 << 10
	// MaxIn bounds a client's frame, header and all: PIPE_BUF, which a
	// pipe or FIFO takes in one piece, so a client that dies never
	// leaves half a frame.
	MaxIn = 4096
	// MaxSpec bounds a start's cwd, argv and env together, as encoded.
	MaxSpec = 256 << 10
	// StdinWindow is the stdin a server buffers per process, at most.
	StdinWindow = 64 << 10
	// ServerMaxProcs is the most processes a server holds at once.
	ServerMaxProcs = 256
	nonceLen       = 16
	helloLen       = nonceLen + 4
	entryLen       = 16
)

// Kinds of frame: the client's, then the server's (high bit set).
const (
	kindHello      = 1
	kindSpec       = 2 // a part of a start's spec; more follows
	kindStart      = 3 // its last part
	kindStdin      = 4
	kindStdinClose = 5
	kindSignal     = 6
	kindResize     = 7
	kindCredit     = 8
	kindRelease    = 9

	kindHelloReply  = 0x81
	kindStarted     = 0x82
	kindStartFailed = 0x83
	kindOut         = 0x84
	kindEOF         = 0x85
	kindExit        = 0x86
	kindStdinCredit = 0x87
	kindReleased    = 0x88
)

// Streams of a process.
const (
	// Stdin is a process's input.
	Stdin = 0
	// Stdout is its output, or its terminal's.
	Stdout = 1
	// Stderr is its error output (none on a terminal).
	Stderr = 2
)

// Flags of a spec, and of a process in a hello-reply.
const (
	specPTY   = 1
	specStdin = 2

	entryExited = 1
	entryPTY    = 2
	entryStdin  = 4
	entryStdout = 8
	entryStderr = 16
	entryAll    = entryExited | entryPTY | entryStdin | entryStdout | entryStderr
)

// ErrServerGone: the server's output ended, it died or its channel
// closed.
var ErrServerGone = errors.New("the process server's output ended: it died or its channel closed")

// ProtocolError is a server's frame out of protocol: the channel is
// broken.
type ProtocolError struct {
	What string
}

func (e *ProtocolError) Error() string { return "process server protocol violation: " + e.What }

func violation(format string, args ...any) error {
	return &ProtocolError{What: fmt.Sprintf(format, args...)}
}

// frame is one of the server's frames.
type frame struct {
	kind, stream byte
	id           uint32
	payload      []byte
}

// header encodes a frame header into b.
func header(b []byte, kind, stream byte, id uint32, n int) {
	binary.LittleEndian.PutUint32(b, uint32(n))
	b[4], b[5], b[6], b[7] = kind, stream, 0, 0
	binary.LittleEndian.PutUint32(b[8:], id)
}

// readFrame reads one of the server's frames into buf (which has room for
// MaxPayload) and returns it, its payload in buf. The length is checked
// before anything is read into buf.
func readFrame(r io.Reader, buf []byte) (frame, error) {
	var h [HeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, readErr(err)
	}
	return readPayload(r, h[:], buf)
}

func readPayload(r io.Reader, h, buf []byte) (frame, error) {
	n := binary.LittleEndian.Uint32(h)
	if n > MaxPayload {
		return frame{}, violation("a frame of %d bytes, more than %d", n, MaxPayload)
	}
	if h[6] != 0 || h[7] != 0 {
		return frame{}, violation("a frame header with non-zero reserved bytes")
	}
	f := frame{kind: h[4], stream: h[5], id: binary.LittleEndian.Uint32(h[8:]), payload: buf[:n]}
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return frame{}, readErr(err)
	}
	return f, nil
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrServerGone
	}
	return fmt.Errorf("reading from the process server: %w", err)
}

// Spec is a process to start.
type Spec struct {
	// Args is the command, found on Env's PATH.
	Args []string
	// Env is its whole environment (NAME=value).
	Env []string
	// Cwd is where it starts; "" is the server's own.
	Cwd string
	// Stdin keeps its stdin open for Process.Stdin; otherwise it reads
	// end of file (on a terminal: nothing).
	Stdin bool
	// PTY runs it on a terminal of this size; stdout and stderr are the
	// one stream Stdout then.
	PTY *Size
}

// Size is a terminal's size in characters.
type Size struct {
	Rows, Cols uint16
}

// encodeSpec encodes s as a start's payload: flags, a zero byte, rows and
// cols, two zero bytes, argc and envc, then cwd, argv and env, each
// ended by a NUL.
func encodeSpec(s Spec) ([]byte, error) {
	if len(s.Args) == 0 {
		return nil, errors.New("starting a process: no command")
	}
	n := 16 + len(s.Cwd) + 1
	for _, v := range [][]string{s.Args, s.Env} {
		for _, a := range v {
			n += len(a) + 1
		}
	}
	if n > MaxSpec {
		return nil, fmt.Errorf("starting a process: its command, environment and directory take %d bytes, more than %d", n, MaxSpec)
	}
	b := make([]byte, 16, n)
	if s.PTY != nil {
		b[0] |= specPTY
		binary.LittleEndian.PutUint16(b[2:], s.PTY.Rows)
		binary.LittleEndian.PutUint16(b[4:], s.PTY.Cols)
	}
	if s.Stdin {
		b[0] |= specStdin
	}
	binary.LittleEndian.PutUint32(b[8:], uint32(len(s.Args)))
	binary.LittleEndian.PutUint32(b[12:], uint32(len(s.Env)))
	for _, v := range [][]string{{s.Cwd}, s.Args, s.Env} {
		for _, a := range v {
			for i := 0; i < len(a); i++ {
				if a[i] == 0 {
					return nil, fmt.Errorf("starting a process: %q holds a NUL byte", a)
				}
			}
			b = append(append(b, a...), 0)
		}
	}
	return b, nil
}

// Exit is how a process ended.
type Exit struct {
	// Code is its exit status when it exited, -1 when a signal ended it.
	Code int
	// Signal is the signal that ended it, 0 when it exited.
	Signal int
	// Core says it dumped core.
	Core bool
}

// Status is the end as a shell reports it: the code, or 128 and the
// signal (as boxer-init reports its program's).
func (e Exit) Status() int {
	if e.Signal != 0 {
		return 128 + e.Signal
	}
	return e.Code
}

func decodeExit(b []byte) (Exit, error) {
	if len(b) != 4 || b[0] > 1 || b[2] > 1 || b[3] != 0 || (b[0] == 1 && (b[1] == 0 || b[1] >= 65)) || (b[0] == 0 && b[2] != 0) {
		return Exit{}, violation("a malformed exit (% x)", b)
	}
	if b[0] == 1 {
		return Exit{Code: -1, Signal: int(b[1]), Core: b[2] == 1}, nil
	}
	return Exit{Code: int(b[1])}, nil
}

// entry is a process a hello-reply lists.
type entry struct {
	id, pid     uint32
	flags       byte
	exit        Exit
	stdinCredit uint32
}

// decodeHelloReply checks a hello-reply's payload (its nonce already
// matched) and returns the processes it lists, at most max.
func decodeHelloReply(b []byte, max int) ([]entry, error) {
	if len(b) < helloLen || (len(b)-helloLen)%entryLen != 0 {
		return nil, violation("a hello-reply of %d bytes", len(b))
	}
	count := binary.LittleEndian.Uint32(b[nonceLen:])
	if int64(count) != int64((len(b)-helloLen)/entryLen) {
		return nil, violation("a hello-reply that counts %d processes in %d bytes", count, len(b))
	}
	if int64(count) > int64(max) {
		return nil, violation("a hello-reply listing %d processes, more than %d", count, max)
	}
	seen := make(map[uint32]bool, count)
	out := make([]entry, 0, count)
	for e := b[helloLen:]; len(e) > 0; e = e[entryLen:] {
		en := entry{
			id:          binary.LittleEndian.Uint32(e),
			pid:         binary.LittleEndian.Uint32(e[4:]),
			flags:       e[8],
			stdinCredit: binary.LittleEndian.Uint32(e[12:]),
		}
		if en.id == 0 || seen[en.id] {
			return nil, violation("a hello-reply listing process %d twice or as 0", en.id)
		}
		seen[en.id] = true
		if en.flags&^entryAll != 0 || e[11] != 0 || en.pid == 0 || en.pid > 1<<22 {
			return nil, violation("a hello-reply with a malformed entry for process %d", en.id)
		}
		if en.stdinCredit > StdinWindow || (en.flags&entryStdin == 0 && en.stdinCredit != 0) {
			return nil, violation("a hello-reply granting process %d stdin credit %d", en.id, en.stdinCredit)
		}
		if en.flags&entryPTY != 0 && en.flags&entryStderr != 0 {
			return nil, violation("a hello-reply giving process %d's terminal a stderr", en.id)
		}
		if en.flags&entryExited != 0 {
			x, err := decodeExit([]byte{e[9], e[10], 0, 0})
			if err != nil {
				return nil, err
			}
			en.exit = x
		} else if e[9] != 0 || e[10] != 0 {
			return nil, violation("a hello-reply with an exit status for running process %d", en.id)
		}
		out = append(out, en)
	}
	return out, nil
}
