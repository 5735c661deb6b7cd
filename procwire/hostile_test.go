package procwire

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fake is a hostile server: it reads the client's frames (so the client
// never blocks writing) and writes what a test tells it to.
type fake struct {
	t      *testing.T
	toC    *io.PipeWriter // the client's r, from this end
	fromC  *io.PipeReader // the client's w, to this end
	frames chan frame
}

func newFake(t *testing.T, lim Limits) (*fake, *Client) {
	cr, fw := io.Pipe()
	fr, cw := io.Pipe()
	f := &fake{t: t, toC: fw, fromC: fr, frames: make(chan frame, 1024)}
	go func() {
		for {
			var h [HeaderLen]byte
			if _, err := io.ReadFull(fr, h[:]); err != nil {
				close(f.frames)
				return
			}
			n := binary.LittleEndian.Uint32(h[:])
			b := make([]byte, n)
			if _, err := io.ReadFull(fr, b); err != nil {
				close(f.frames)
				return
			}
			select {
			case f.frames <- frame{kind: h[4], stream: h[5], id: binary.LittleEndian.Uint32(h[8:]), payload: b}:
			default: // a flood of credit: not kept
			}
		}
	}()
	t.Cleanup(func() {
		fw.Close()
		fr.Close()
	})
	return f, New(cr, cw, lim)
}

// next is the client's next frame of kind.
func (f *fake) next(kind byte) frame {
	f.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case fr, ok := <-f.frames:
			if !ok {
				f.t.Fatalf("the client's channel closed before a frame of kind %d", kind)
			}
			if fr.kind == kind {
				return fr
			}
		case <-timeout:
			f.t.Fatalf("no frame of kind %d from the client", kind)
		}
	}
}

// write sends raw bytes to the client, ignoring a closed pipe (the
// client stops reading once it breaks the channel).
func (f *fake) write(b []byte) {
	_, _ = f.toC.Write(b)
}

func frameBytes(kind, stream byte, id uint32, payload []byte) []byte {
	b := make([]byte, HeaderLen+len(payload))
	header(b, kind, stream, id, len(payload))
	copy(b[HeaderLen:], payload)
	return b
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// helloReply answers the client's hello with entries.
func (f *fake) helloReply(entries ...[]byte) []byte {
	h := f.next(kindHello)
	p := append(append([]byte{}, h.payload[:nonceLen]...), u32(uint32(len(entries)))...)
	for _, e := range entries {
		p = append(p, e...)
	}
	return frameBytes(kindHelloReply, 0, 0, p)
}

// hello runs the client's Hello against the fake's reply (after junk).
func (f *fake) hello(c *Client, junk []byte, entries ...[]byte) ([]*Process, error) {
	type res struct {
		procs []*Process
		err   error
	}
	done := make(chan res, 1)
	go func() {
		procs, err := c.Hello(context.Background())
		done <- res{procs, err}
	}()
	f.write(junk)
	f.write(f.helloReply(entries...))
	r := <-done
	return r.procs, r.err
}

// started starts a process on the fake and returns it.
func (f *fake) started(c *Client, spec Spec) *Process {
	f.t.Helper()
	done := make(chan *Process, 1)
	go func() {
		p, err := c.Start(context.Background(), spec)
		if err != nil {
			f.t.Errorf("start: %v", err)
		}
		done <- p
	}()
	st := f.next(kindStart)
	f.write(frameBytes(kindStarted, 0, st.id, u32(4242)))
	return <-done
}

// broken waits for the client's channel to break, and returns why.
func broken(t *testing.T, c *Client) error {
	t.Helper()
	select {
	case <-c.Broken():
		return c.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not break the channel")
		return nil
	}
}

// allocated is what the program has allocated so far, all of it.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestHostileServer: a server that speaks out of protocol breaks the
// channel with an error that says what, and costs the client no more
// memory than its limits.
func TestHostileServer(t *testing.T) {
	// What the server sends is made before the client's allocations are
	// counted.
	mib := make([]byte, 1<<20)
	full := frameBytes(kindOut, Stdout, 1, make([]byte, MaxPayload))
	fullErr := frameBytes(kindOut, Stderr, 1, make([]byte, MaxPayload))
	tests := []struct {
		name string
		// send is what the server sends once p (id 1, stdout and
		// stderr, stdin) has started.
		send func(f *fake, p *Process)
		want string
	}{
		{"garbage", func(f *fake, p *Process) { f.write([]byte(strings.Repeat("garbage!", 1000))) }, "a frame of 1651663207 bytes"},
		{"1 GiB frame", func(f *fake, p *Process) {
			f.write(append(u32(1<<30), kindOut, Stdout, 0, 0, 1, 0, 0, 0))
			f.write(mib)
		}, "a frame of 1073741824 bytes, more than 32768"},
		{"forged exit", func(f *fake, p *Process) { f.write(frameBytes(kindExit, 0, 77, []byte{0, 0, 0, 0})) }, "process 77, which this client did not start"},
		{"second exit", func(f *fake, p *Process) {
			f.write(frameBytes(kindExit, 0, p.id, []byte{0, 3, 0, 0}))
			f.write(frameBytes(kindExit, 0, p.id, []byte{0, 0, 0, 0}))
		}, "a second exit for process 1"},
		{"beyond credit", func(f *fake, p *Process) {
			for range 100 {
				f.write(full)
			}
		}, "beyond its credit of"},
		{"flood", func(f *fake, p *Process) {
			// Within the credit on both streams, then on: 64 MiB offered.
			for range 2048 {
				f.write(fullErr)
			}
		}, "beyond its credit of"},
		{"unknown kind", func(f *fake, p *Process) { f.write(frameBytes(0x7f, 0, p.id, nil)) }, "unknown kind 0x7f"},
		{"reserved bytes", func(f *fake, p *Process) { f.write(append(u32(0), kindEOF, Stdout, 1, 0, 1, 0, 0, 0)) }, "non-zero reserved bytes"},
		{"stdin credit flood", func(f *fake, p *Process) {
			f.write(frameBytes(kindStdinCredit, 0, p.id, u32(1)))
		}, "beyond its window"},
		{"eof twice", func(f *fake, p *Process) {
			f.write(frameBytes(kindEOF, Stdout, p.id, nil))
			f.write(frameBytes(kindEOF, Stdout, p.id, nil))
		}, "which has ended or does not exist"},
		{"output on stdin", func(f *fake, p *Process) { f.write(frameBytes(kindOut, Stdin, p.id, []byte("x"))) }, "stream 0"},
		{"bad exit", func(f *fake, p *Process) { f.write(frameBytes(kindExit, 0, p.id, []byte{1, 0, 0, 0})) }, "a malformed exit"},
		{"started twice", func(f *fake, p *Process) { f.write(frameBytes(kindStarted, 0, p.id, u32(5))) }, "which is not starting"},
		{"release unasked", func(f *fake, p *Process) { f.write(frameBytes(kindReleased, 0, p.id, nil)) }, "which was not released"},
		{"second hello-reply", func(f *fake, p *Process) { f.write(frameBytes(kindHelloReply, 0, 0, make([]byte, 20))) }, "a hello-reply nobody asked for"},
		{"server dies", func(f *fake, p *Process) { f.toC.Close() }, ErrServerGone.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t, Limits{})
			if _, err := f.hello(c, nil); err != nil {
				t.Fatal(err)
			}
			p := f.started(c, Spec{Args: []string{"x"}, Stdin: true})
			f.write(frameBytes(kindStdinCredit, 0, p.id, u32(StdinWindow)))
			before := allocated()
			sent := make(chan struct{})
			go func() {
				tc.send(f, p)
				close(sent)
			}()
			err := broken(t, c)
			f.toC.Close()
			<-sent
			// The client took at most a window per stream (2 x 256 KiB),
			// and never what a frame's length claimed.
			if took := allocated() - before; took > 2<<20 {
				t.Errorf("the client allocated %d bytes", took)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the channel broke with %v, want %q", err, tc.want)
			}
			var pe *ProtocolError
			if tc.name != "server dies" && !errors.As(err, &pe) {
				t.Errorf("%v is not a *ProtocolError", err)
			}
			// Every call now fails with the reason.
			if _, err := c.Start(context.Background(), Spec{Args: []string{"x"}}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("start after the break: %v", err)
			}
			if _, err := p.Stdin().Write([]byte("x")); err == nil {
				t.Errorf("stdin after the break took a write")
			}
		})
	}
}

// TestHostileHello: a hello-reply out of shape, or none, fails Hello; one
// after junk (a dead client's frames) is found.
func TestHostileHello(t *testing.T) {
	entry := func(id, pid uint32, flags, signaled, value byte, credit uint32) []byte {
		e := append(u32(id), u32(pid)...)
		e = append(e, flags, signaled, value, 0)
		return append(e, u32(credit)...)
	}
	tests := []struct {
		name    string
		junk    []byte
		entries [][]byte
		want    string // "" is success
	}{
		{"after junk", []byte(strings.Repeat("\x81\x00\x00\x00junk", 10000)), [][]byte{entry(3, 10, entryStdout, 0, 0, 0)}, ""},
		{"ids twice", nil, [][]byte{entry(3, 10, 0, 0, 0, 0), entry(3, 11, 0, 0, 0, 0)}, "listing process 3 twice"},
		{"id 0", nil, [][]byte{entry(0, 10, 0, 0, 0, 0)}, "as 0"},
		{"unknown flags", nil, [][]byte{entry(1, 10, 0x40, 0, 0, 0)}, "malformed entry"},
		{"stdin credit", nil, [][]byte{entry(1, 10, entryStdin, 0, 0, StdinWindow+1)}, "stdin credit"},
		{"status while running", nil, [][]byte{entry(1, 10, 0, 0, 3, 0)}, "exit status for running"},
		{"terminal's stderr", nil, [][]byte{entry(1, 10, entryPTY|entryStderr, 0, 0, 0)}, "terminal a stderr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t, Limits{})
			procs, err := f.hello(c, tc.junk, tc.entries...)
			if tc.want == "" {
				if err != nil || len(procs) != 1 || procs[0].ID() != 3 {
					t.Fatalf("hello after junk: %v %v", procs, err)
				}
				// The next id is past the adopted one.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go c.Start(ctx, Spec{Args: []string{"x"}})
				if st := f.next(kindStart); st.id != 4 {
					t.Errorf("the next start has id %d, want 4", st.id)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("hello = %v, want %q", err, tc.want)
			}
		})
	}

	t.Run("too many", func(t *testing.T) {
		f, c := newFake(t, Limits{MaxProcs: 2})
		_, err := f.hello(c, nil, entry(1, 10, 0, 0, 0, 0), entry(2, 10, 0, 0, 0, 0), entry(3, 10, 0, 0, 0, 0))
		if err == nil || !strings.Contains(err.Error(), "listing 3 processes, more than 2") {
			t.Fatalf("hello = %v", err)
		}
	})
	t.Run("never", func(t *testing.T) {
		f, c := newFake(t, Limits{ResyncBytes: 1 << 20})
		done := make(chan error, 1)
		go func() {
			_, err := c.Hello(context.Background())
			done <- err
		}()
		f.next(kindHello)
		go func() {
			junk := make([]byte, 64<<10)
			for range 64 {
				f.write(junk)
			}
		}()
		if err := <-done; err == nil || !strings.Contains(err.Error(), "no hello-reply in the first") {
			t.Fatalf("hello = %v", err)
		}
	})
}

// TestAbandonedStart: a start whose caller gave up is killed once it
// starts, and released once it ends: it holds no place for long.
func TestAbandonedStart(t *testing.T) {
	f, c := newFake(t, Limits{MaxProcs: 1})
	if _, err := f.hello(c, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Start(ctx, Spec{Args: []string{"x"}})
		done <- err
	}()
	st := f.next(kindStart)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("start = %v, want context.Canceled", err)
	}
	f.write(frameBytes(kindStarted, 0, st.id, u32(10)))
	if sig := f.next(kindSignal); sig.id != st.id || binary.LittleEndian.Uint32(sig.payload) != 9 || sig.payload[4] != 1 {
		t.Fatalf("after its start the abandoned process got %+v, want SIGKILL to its group", sig)
	}
	f.write(frameBytes(kindExit, 0, st.id, []byte{1, 9, 0, 0}))
	if rel := f.next(kindRelease); rel.id != st.id {
		t.Fatalf("release of %d, want %d", rel.id, st.id)
	}
	f.write(frameBytes(kindReleased, 0, st.id, nil))
	// Its place is free again: the next start goes out.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go c.Start(ctx2, Spec{Args: []string{"y"}})
	if st2 := f.next(kindStart); st2.id != st.id+1 {
		t.Fatalf("the next start has id %d", st2.id)
	}
}
