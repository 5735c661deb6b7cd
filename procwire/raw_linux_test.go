package procwire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"syscall"
	"testing"
)

// TestLongStart: a start longer than a frame goes in parts and runs
// (an argument of 100 KiB: Linux takes up to 128 KiB a string).
func TestLongStart(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	long := strings.Repeat("x", 100<<10)
	got := run(t, c, Spec{Args: []string{"sh", "-c", `echo ${#0} ${#LONG}`, long}, Env: append([]string{"LONG=" + long[:20000]}, env...)}, nil)
	if got.stdout != "102400 20000\n" {
		t.Errorf("a long start wrote %q", got.stdout)
	}
	if _, err := c.Start(ctxFor(t), Spec{Args: []string{"sh", long, long, long}}); err == nil || !strings.Contains(err.Error(), "more than 262144") {
		t.Errorf("a start over MaxSpec: %v", err)
	}
}

// TestRawStarts: what the client never sends, written to the server
// raw: a start over 256 KiB fails once, whatever more of it comes; a
// malformed start fails; a start half sent and left behind is dropped.
func TestRawStarts(t *testing.T) {
	send, next := rawServer(t)
	send(kindHello, 0, make([]byte, helloLen))
	if f := next(); f.kind != kindHelloReply {
		t.Fatalf("kind %#x, want a hello-reply", f.kind)
	}
	part := make([]byte, MaxIn-HeaderLen)
	for range MaxSpec/len(part) + 2 {
		send(kindSpec, 7, part)
	}
	send(kindStart, 7, part)
	if f := next(); f.kind != kindStartFailed || f.id != 7 || binary.LittleEndian.Uint32(f.payload) != uint32(syscall.E2BIG) {
		t.Fatalf("a start over 256 KiB: kind %#x id %d %q", f.kind, f.id, f.payload)
	}
	send(kindStart, 9, []byte("not a spec at all"))
	if f := next(); f.kind != kindStartFailed || f.id != 9 || !bytes.Contains(f.payload, []byte("malformed")) {
		t.Fatalf("a malformed start: kind %#x id %d %q", f.kind, f.id, f.payload)
	}
	spec, err := encodeSpec(Spec{Args: []string{"true"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	send(kindSpec, 10, spec[:5])
	send(kindStart, 11, spec)
	if f := next(); f.kind != kindStarted || f.id != 11 {
		t.Fatalf("after a start left half sent: kind %#x id %d %q", f.kind, f.id, f.payload)
	}
	for f := next(); f.kind != kindExit; f = next() {
		if f.id != 11 {
			t.Fatalf("a frame of kind %#x for %d", f.kind, f.id)
		}
	}
}

// TestServerMaxProcs: the server holds at most ServerMaxProcs processes,
// whatever its client asks: the next start fails, and a release makes
// room again.
func TestServerMaxProcs(t *testing.T) {
	send, next := rawServer(t)
	send(kindHello, 0, make([]byte, helloLen))
	next()
	sleep, err := encodeSpec(Spec{Args: []string{"sleep", "100"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint32(1); id <= ServerMaxProcs+1; id++ {
		send(kindStart, id, sleep)
		f := next()
		if id <= ServerMaxProcs && (f.kind != kindStarted || f.id != id) {
			t.Fatalf("start %d: kind %#x %q", id, f.kind, f.payload)
		}
		if id == ServerMaxProcs+1 && (f.kind != kindStartFailed || !bytes.Contains(f.payload, []byte("too many processes"))) {
			t.Fatalf("start %d, past the most: kind %#x %q", id, f.kind, f.payload)
		}
	}
	var sig [5]byte
	binary.LittleEndian.PutUint32(sig[:], 9)
	send(kindSignal, 1, sig[:])
	for f := next(); f.kind != kindExit || f.id != 1; f = next() {
	}
	send(kindRelease, 1, nil)
	if f := next(); f.kind != kindReleased || f.id != 1 {
		t.Fatalf("release: kind %#x id %d", f.kind, f.id)
	}
	send(kindStart, 1000, sleep)
	if f := next(); f.kind != kindStarted || f.id != 1000 {
		t.Fatalf("a start after a release: kind %#x id %d %q", f.kind, f.id, f.payload)
	}
}

// rawServer starts a server and speaks to it without a client: send
// writes one frame, next reads one.
func rawServer(t *testing.T) (send func(kind byte, id uint32, payload []byte), next func() frame) {
	s := startServer(t)
	send = func(kind byte, id uint32, payload []byte) {
		t.Helper()
		b := make([]byte, HeaderLen+len(payload))
		header(b, kind, 0, id, len(payload))
		copy(b[HeaderLen:], payload)
		if _, err := s.in.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(s.out)
	buf := make([]byte, MaxPayload)
	next = func() frame {
		t.Helper()
		f, err := readFrame(r, buf)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	return send, next
}
