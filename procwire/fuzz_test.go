package procwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// replay is a server that answers the client's hello with a reply
// listing three processes, then sends data and ends.
type replay struct {
	data  []byte
	once  sync.Once
	nonce chan []byte
	r     io.Reader
}

func (s *replay) Write(b []byte) (int, error) {
	if len(b) >= HeaderLen+helloLen && b[4] == kindHello {
		s.once.Do(func() { s.nonce <- append([]byte{}, b[HeaderLen:HeaderLen+nonceLen]...) })
	}
	return len(b), nil
}

func (s *replay) Read(b []byte) (int, error) {
	if s.r == nil {
		nonce := <-s.nonce
		entry := func(id uint32, flags, signaled, value byte, credit uint32) []byte {
			e := binary.LittleEndian.AppendUint32(nil, id)
			e = binary.LittleEndian.AppendUint32(e, 100+id)
			e = append(e, flags, signaled, value, 0)
			return binary.LittleEndian.AppendUint32(e, credit)
		}
		p := append(nonce, 3, 0, 0, 0)
		p = append(p, entry(1, entryStdin|entryStdout|entryStderr, 0, 0, 100)...)
		p = append(p, entry(2, entryPTY|entryStdin|entryStdout, 0, 0, StdinWindow)...)
		p = append(p, entry(3, entryExited|entryStdout, 0, 3, 0)...)
		s.r = io.MultiReader(bytes.NewReader(frameBytes(kindHelloReply, 0, 0, p)), bytes.NewReader(s.data))
	}
	return s.r.Read(b)
}

// FuzzClient feeds a client what a hostile server sends after a good
// hello-reply (processes 1 and 2 running, 3 ended): the client never
// panics, ends with the server gone or a *ProtocolError, and holds no
// more output per stream than its window.
func FuzzClient(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const window = 4096
		// The server's input is its output's: the hello's nonce goes back.
		s := &replay{data: data, nonce: make(chan []byte, 1)}
		c := New(s, s, Limits{Window: window})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		procs, err := c.Hello(ctx)
		if err != nil || len(procs) != 3 {
			t.Fatalf("hello: %d processes, %v", len(procs), err)
		}
		select {
		case <-c.Broken():
		case <-ctx.Done():
			t.Fatal("the client did not end with its server")
		}
		var pe *ProtocolError
		if err := c.Err(); !errors.Is(err, ErrServerGone) && !errors.As(err, &pe) {
			t.Fatalf("the channel broke with %v (%T)", err, err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range procs {
			for _, s := range []int{Stdout, Stderr} {
				st := p.out[s]
				if held := len(st.data) - st.off; held > window || st.credit+held+st.pending != window {
					t.Errorf("process %d stream %d: %d bytes held, credit %d: beyond a window of %d", p.id, s, held, st.credit, window)
				}
			}
		}
	})
}

// fuzzSeeds are good frames and near misses; testdata/fuzz/FuzzClient
// holds them too.
func fuzzSeeds() [][]byte {
	cat := func(frames ...[]byte) []byte { return bytes.Join(frames, nil) }
	return [][]byte{
		nil,
		cat(frameBytes(kindOut, Stdout, 1, []byte("hello\n")), frameBytes(kindOut, Stderr, 1, []byte("oops\n")),
			frameBytes(kindEOF, Stdout, 1, nil), frameBytes(kindEOF, Stderr, 1, nil), frameBytes(kindExit, 0, 1, []byte{0, 3, 0, 0})),
		cat(frameBytes(kindOut, Stdout, 2, []byte("\x1b[1mtty\r\n")), frameBytes(kindExit, 0, 2, []byte{1, 9, 1, 0})),
		cat(frameBytes(kindStdinCredit, 0, 1, u32(4096)), frameBytes(kindStdinCredit, 0, 2, u32(1))),
		cat(frameBytes(kindOut, Stdout, 3, make([]byte, 4096)), frameBytes(kindOut, Stdout, 3, []byte("x"))),
		cat(frameBytes(kindExit, 0, 1, []byte{0, 0, 0, 0}), frameBytes(kindExit, 0, 1, []byte{0, 0, 0, 0})),
		cat(frameBytes(kindStarted, 0, 4, u32(7)), frameBytes(kindReleased, 0, 3, nil)),
		append(u32(1<<30), kindOut, Stdout, 0, 0, 1, 0, 0, 0),
		[]byte("garbage that is not a frame at all"),
	}
}
