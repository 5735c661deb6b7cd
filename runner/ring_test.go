package runner

import (
	"bytes"
	"strings"
	"testing"
)

func TestRing(t *testing.T) {
	r := newRing(10)
	r.write(StreamStdout, []byte("abc"))
	r.write(StreamStderr, []byte("de"))
	r.write(StreamStdout, []byte("f"))
	out, next, dropped, done, _ := r.read(0)
	if got := join(out); got != "stdout:abc stderr:de stdout:f" || next != 6 || dropped != 0 || done {
		t.Fatalf("read(0) = %q next %d dropped %d done %v", got, next, dropped, done)
	}
	// A reader that read up to 4 gets the rest only.
	if out, _, _, _, _ := r.read(4); join(out) != "stderr:e stdout:f" {
		t.Errorf("read(4) = %q", join(out))
	}
	// Past max the oldest bytes go, and a reader from 0 is told how many.
	r.write(StreamStdout, []byte("0123456"))
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
	r.write(StreamStderr, []byte(strings.Repeat("x", 25)+"END"))
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
