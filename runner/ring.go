package runner

import "sync"

// ring keeps the last bytes of a process's output, stdout and stderr in
// the order they came, for readers that attach at any time: a reader
// names the offset it has read to (0 at first) and gets what is still
// held after it, and how much left the ring before it could.
type ring struct {
	mu     sync.Mutex
	max    int
	chunks []chunk
	// start is the offset of chunks[0]'s first byte; end is the offset
	// after the last byte ever written.
	start, end int64
	closed     bool
	// changed is closed and replaced whenever something is written or
	// the ring is closed.
	changed chan struct{}
}

type chunk struct {
	stream string
	data   []byte
}

func newRing(max int) *ring {
	return &ring{max: max, changed: make(chan struct{})}
}

// write adds p to stream's output, dropping the oldest bytes beyond max.
func (r *ring) write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.chunks); n > 0 && r.chunks[n-1].stream == stream && len(r.chunks[n-1].data) < 32<<10 {
		r.chunks[n-1].data = append(r.chunks[n-1].data, p...)
	} else {
		r.chunks = append(r.chunks, chunk{stream: stream, data: append([]byte(nil), p...)})
	}
	r.end += int64(len(p))
	for r.end-r.start > int64(r.max) {
		over := int(r.end - r.start - int64(r.max))
		first := &r.chunks[0]
		if over >= len(first.data) {
			r.start += int64(len(first.data))
			r.chunks = r.chunks[1:]
			continue
		}
		first.data = append([]byte(nil), first.data[over:]...)
		r.start += int64(over)
	}
	r.wake()
}

// close says no more output will come.
func (r *ring) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.wake()
}

func (r *ring) wake() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// read returns the output after offset from, its new offset, how many
// bytes after from are gone, whether the ring is closed (what read
// returned is the last), and a channel closed when there is more.
func (r *ring) read(from int64) (out []chunk, next, dropped int64, done bool, more <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if from < r.start {
		dropped = r.start - from
		from = r.start
	}
	off := r.start
	for _, c := range r.chunks {
		n := int64(len(c.data))
		if off+n > from {
			skip := max(from-off, 0)
			out = append(out, chunk{stream: c.stream, data: append([]byte(nil), c.data[skip:]...)})
		}
		off += n
	}
	return out, r.end, dropped, r.closed, r.changed
}
