package keeper

// A session's wire: the frames between boxer and the session's interpreter.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/containerd/containerd/v2/pkg/cio"
	"golang.org/x/sys/unix"
)

// The wire is how boxer talks to a session's interpreter without a process
// per call (docs/reference.md, "Sessions"). The driver's streams are two
// FIFOs in the session's run directory, which only root on the host can
// reach: boxer writes frames into wireIn (the driver's stdin) and reads
// frames from wireOut (its stdout). The driver's stderr is wireIn as well,
// held open and never written: the shim keeps that FIFO open for writing
// as long as the driver lives, so its stdin does not end when a caller
// closes its end, and any boxer process can be the next caller.
//
// A frame is a header line "KIND CALL LENGTH\n" and LENGTH bytes. In:
// "run" (the name of the call's code in /code), "in" (stdin bytes) and
// "eof"; each at most wireMaxIn bytes, which a FIFO takes whole, so that
// a caller that dies never leaves half a frame. Out: "out", "err" and
// "exit" (the call's status). Frames of other calls than the caller's are
// left unread or skipped: a caller that died leaves its own behind.
const (
	// WireIn and WireOut are the FIFOs in a session's run directory.
	WireIn  = "driver-in"
	WireOut = "driver-out"
	// wireMaxIn is PIPE_BUF: a write of at most this many bytes to a FIFO
	// goes in whole or not at all.
	wireMaxIn = 4096
	// wireMaxOut bounds a frame out (the driver sends at most 64 KiB) and
	// wireMaxHeader its header line.
	wireMaxOut    = 1 << 20
	wireMaxHeader = 64
)

// ErrWireGone: the driver's end of the wire is closed (it exited).
var ErrWireGone = errors.New("the session's interpreter is not running")

// ErrWireBroken: the driver sent something that is not a frame (the
// call's code wrote to the wire itself).
var ErrWireBroken = errors.New("the session's interpreter sent a malformed frame")

// WireCreator makes the driver's FIFOs and holds them open for reading
// while the driver's process is created: the shim opens the write ends,
// which waits for a reader. The caller closes the IO once the driver has
// started; from then on the shim holds both FIFOs.
func WireCreator(runDir string) cio.Creator { return fifoCreator(runDir, WireIn, WireOut) }

// fifoCreator makes a first program's FIFOs, inName its stdin and stderr,
// outName its stdout (WireCreator).
func fifoCreator(runDir, inName, outName string) cio.Creator {
	return func(string) (cio.IO, error) {
		in, out := filepath.Join(runDir, inName), filepath.Join(runDir, outName)
		d, err := box.NewDetachedIO(cio.Config{Stdin: in, Stdout: out, Stderr: in}, []string{in, out}, []string{in, out})
		if err != nil {
			return nil, err // not a nil *box.DetachedIO in a non-nil cio.IO
		}
		return d, nil
	}
}

// Wire is one caller's ends of a session's wire: its FIFOs, or a
// connection to the keeper that relays it (keeper_driver_linux.go).
type Wire struct {
	in  wireIn
	out io.Closer // nil when in is the connection
	r   *bufio.Reader
}

// wireIn is the end a caller writes frames into.
type wireIn interface {
	io.WriteCloser
	SetWriteDeadline(time.Time) error
}

// Frame is one frame out of the driver.
type Frame struct {
	Kind string
	Call int
	Data []byte
	// Err ends the frames: io.EOF, ErrWireBroken or a read error.
	Err error
}

// OpenWire opens the wire of the session in runDir. Both ends are
// non-blocking, so that reads and writes take deadlines and end on Close.
func OpenWire(runDir string) (*Wire, error) {
	in, err := os.OpenFile(filepath.Join(runDir, WireIn), os.O_WRONLY|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENXIO) || errors.Is(err, os.ErrNotExist) {
		// No reader: the shim's copy into the driver's stdin has ended.
		return nil, ErrWireGone
	} else if err != nil {
		return nil, fmt.Errorf("opening the session's interpreter: %w", err)
	}
	if err := checkFIFO(in); err != nil {
		in.Close()
		return nil, err
	}
	out, err := os.OpenFile(filepath.Join(runDir, WireOut), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("opening the session's interpreter: %w", err)
	}
	if err := checkFIFO(out); err != nil {
		in.Close()
		out.Close()
		return nil, err
	}
	return &Wire{in: in, out: out, r: bufio.NewReaderSize(out, 64<<10)}, nil
}

// checkFIFO refuses a wire end that is not a FIFO.
func checkFIFO(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("opening the session's interpreter: %w", err)
	}
	if fi.Mode().Type() != os.ModeNamedPipe {
		return fmt.Errorf("opening the session's interpreter: %s is not a FIFO", f.Name())
	}
	return nil
}

// Close closes both ends: a read or write under way returns.
func (w *Wire) Close() error {
	if w.out == nil {
		return w.in.Close()
	}
	return errors.Join(w.in.Close(), w.out.Close())
}

// Send writes one frame in, whole.
func (w *Wire) Send(kind string, call int, data []byte) error {
	b := Frame{Kind: kind, Call: call, Data: data}.encode()
	if len(b) > wireMaxIn {
		return fmt.Errorf("a %s frame of %d bytes is over %d", kind, len(b), wireMaxIn)
	}
	_, err := w.in.Write(b)
	if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
		return ErrWireGone
	}
	return err
}

// SendStdin sends r as call's stdin, in frames, and then its end. It
// returns when r ends or a send fails (the wire was closed).
func (w *Wire) SendStdin(call int, r io.Reader) error {
	if r != nil {
		// Room for the header ("in", the call and the length).
		buf := make([]byte, wireMaxIn-64)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if serr := w.Send("in", call, buf[:n]); serr != nil {
					return serr
				}
			}
			if err == io.EOF {
				break
			} else if err != nil {
				return err
			}
		}
	}
	return w.Send("eof", call, nil)
}

// receive reads the next frame out. io.EOF means the driver's end is
// closed; errWireBroken, that what came is not a frame.
func (w *Wire) receive() (Frame, error) { return readFrame(w.r, wireMaxOut) }

// readFrame reads the next frame from r, its data at most max bytes.
// io.EOF means r ended (between two frames or in one); ErrWireBroken,
// that what came is not a frame.
func readFrame(r *bufio.Reader, max int) (Frame, error) {
	ended := func(err error) error {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
			return io.EOF
		}
		return err
	}
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return Frame{}, ErrWireBroken
	} else if err != nil {
		return Frame{}, ended(err)
	}
	fields := bytes.Fields(line)
	if len(line) > wireMaxHeader || len(fields) != 3 {
		return Frame{}, ErrWireBroken
	}
	call, err1 := strconv.Atoi(string(fields[1]))
	n, err2 := strconv.Atoi(string(fields[2]))
	if err1 != nil || err2 != nil || n < 0 || n > max {
		return Frame{}, ErrWireBroken
	}
	f := Frame{Kind: string(fields[0]), Call: call, Data: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Data); err != nil {
		return Frame{}, ended(err)
	}
	return f, nil
}

// encode is f as it goes on the wire.
func (f Frame) encode() []byte {
	return append(fmt.Appendf(nil, "%s %d %d\n", f.Kind, f.Call, len(f.Data)), f.Data...)
}

// ReceiveAll sends the frames out on frames until the wire ends or breaks,
// and then a frame with the error, or until done is closed.
func (w *Wire) ReceiveAll(frames chan<- Frame, done <-chan struct{}) {
	for {
		f, err := w.receive()
		f.Err = err
		select {
		case frames <- f:
		case <-done:
			return
		}
		if err != nil {
			return
		}
	}
}

// StopSending ends a write under way (a driver that no longer reads).
func (w *Wire) StopSending() { _ = w.in.SetWriteDeadline(time.Now()) }
