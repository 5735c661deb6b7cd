package keeper

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
)

func TestRing(t *testing.T) {
	r := newRing(10, 0)
	r.write(contract.StreamStdout, []byte("abc"))
	r.write(contract.StreamStderr, []byte("de"))
	r.write(contract.StreamStdout, []byte("f"))
	out, next, dropped, done, _ := r.read(0)
	if got := join(out); got != "stdout:abc stderr:de stdout:f" || next != 6 || dropped != 0 || done {
		t.Fatalf("read(0) = %q next %d dropped %d done %v", got, next, dropped, done)
	}
	// A reader that read up to 4 gets the rest only.
	if out, _, _, _, _ := r.read(4); join(out) != "stderr:e stdout:f" {
		t.Errorf("read(4) = %q", join(out))
	}
	// Past max the oldest bytes go, and a reader from 0 is told how many.
	r.write(contract.StreamStdout, []byte("0123456"))
	out, next, dropped, _, _ = r.read(0)
	if got := join(out); got != "stderr:de stdout:f0123456" || next != 13 || dropped != 3 {
		t.Errorf("after overflow: %q next %d dropped %d", got, next, dropped)
	}
	var all bytes.Buffer
	for _, c := range out {
		all.Write(c.data)
	}
	if all.Len() != 10 {
		t.Errorf("ring holds %d bytes, want its max 10", all.Len())
	}
	// A write larger than the ring keeps its last bytes.
	r.write(contract.StreamStderr, []byte(strings.Repeat("x", 25)+"END"))
	out, _, _, _, _ = r.read(0)
	if got := join(out); got != "stderr:"+strings.Repeat("x", 7)+"END" {
		t.Errorf("after a large write: %q", got)
	}
	// Closed: a reader at the end is done; one behind still gets the rest.
	_, next, _, _, more := r.read(0)
	r.close()
	select {
	case <-more:
	default:
		t.Error("close did not wake readers")
	}
	if _, _, _, done, _ := r.read(next); !done {
		t.Error("a reader at the end of a closed ring is not done")
	}
	if out, _, _, done, _ := r.read(next - 3); !done || join(out) != "stderr:END" {
		t.Errorf("a reader behind a closed ring got %q done %v", join(out), done)
	}
}

func join(cs []chunk) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.stream+":"+string(c.data))
	}
	return strings.Join(parts, " ")
}

// TestRingMemory: a process that writes one byte at a time to stdout and
// stderr in turn makes a chunk of each byte; the keeper's ring counts
// their memory, so it holds about its max in memory, not 90 times it (a
// keeper grew past 380 MiB holding 1 MiB of such output, issue 42).
func TestRingMemory(t *testing.T) {
	r := newRing(contract.DefaultRingBytes, chunkCost)
	x := []byte("x")
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 1 << 20 {
		r.write(contract.StreamStdout, x)
		r.write(contract.StreamStderr, x)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 3*contract.DefaultRingBytes {
		t.Errorf("a ring of %d bytes holds %d MiB of heap after 2 Mi one-byte writes to stdout and stderr in turn (%d chunks)", contract.DefaultRingBytes, grew>>20, len(r.chunks))
	}
	if r.held > r.max {
		t.Errorf("ring holds %d, over its max %d", r.held, r.max)
	}
	// A reader from the start is told how much is gone.
	if out, _, dropped, _, _ := r.read(0); dropped != r.start || dropped == 0 || len(out) == 0 {
		t.Errorf("read(0): dropped %d (start %d), %d chunks", dropped, r.start, len(out))
	}
	runtime.KeepAlive(r)
}

// TestRingReadMax: a reader far behind gets the ring in pieces of at most
// readMax, told at once that more is there, and all of it in the end.
func TestRingReadMax(t *testing.T) {
	r := newRing(contract.DefaultRingBytes, chunkCost)
	data := bytes.Repeat([]byte("0123456789abcdef"), contract.DefaultRingBytes/32)
	r.write(contract.StreamStdout, data)
	r.write(contract.StreamStderr, []byte("END"))
	var got bytes.Buffer
	from := int64(0)
	for reads := 0; ; reads++ {
		out, next, dropped, _, more := r.read(from)
		n := 0
		for _, c := range out {
			n += len(c.data)
			got.Write(c.data)
		}
		if n > readMax || dropped != 0 || next != from+int64(n) {
			t.Fatalf("read(%d): %d bytes, next %d, dropped %d; want at most %d", from, n, next, dropped, readMax)
		}
		from = next
		select {
		case <-more:
			continue
		default:
		}
		if from != r.end || reads < len(data)/readMax {
			t.Fatalf("read(%d) waits after %d reads, the ring ending at %d", from, reads, r.end)
		}
		break
	}
	if want := string(data) + "END"; got.String() != want {
		t.Errorf("read all: %d bytes, want %d", got.Len(), len(want))
	}
}

// TestRingImage: a ring's image makes a ring with the same output at the
// same offsets, and more written after goes on from there.
func TestRingImage(t *testing.T) {
	r := newRing(16, 0)
	r.write("stdout", []byte("0123456789"))
	r.write("stderr", []byte("abcdefghij"))
	b, err := r.marshal()
	if err != nil {
		t.Fatal(err)
	}
	back := unmarshalRing(b, 16, 0)
	if back == nil {
		t.Fatalf("no ring from %s", b)
	}
	back.write("stdout", []byte("XY"))
	out, next, dropped, _, _ := back.read(0)
	var got string
	for _, c := range out {
		got += c.stream[3:4] + ":" + string(c.data) + " "
	}
	if next != 22 || dropped != 6 || got != "o:6789 e:abcdefghij o:XY " {
		t.Errorf("read %q next %d dropped %d, want o:6789 e:abcdefghij o:XY, 22, 6", got, next, dropped)
	}
	if unmarshalRing([]byte("not json"), 16, 0) != nil {
		t.Error("a ring from what is not an image")
	}
}
