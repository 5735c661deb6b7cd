package keeper

import (
	"encoding/json"
	"sync"
)

// ring keeps the last bytes of a process's output, stdout and stderr in
// the order they came, for readers that attach at any time: a reader
// names the offset it has read to (0 at first) and gets what is still
// held after it, and how much left the ring before it could.
//
// Its bound is on memory, not only on output: each chunk (a run of one
// stream) counts chunkCost beside its bytes. A process that wrote one
// byte at a time to stdout and stderr in turn made a chunk of each byte,
// about 90 bytes of memory a byte of output, and its keeper grew past 380
// MiB with 1 MiB of output held (issue 42).
type ring struct {
	mu     sync.Mutex
	max    int
	chunks []chunk
	// start is the offset of chunks[0]'s first byte; end is the offset
	// after the last byte ever written.
	start, end int64
	// held is the bytes held plus cost a chunk, at most max.
	held, cost int
	closed     bool
	// changed is closed and replaced whenever something is written or
	// the ring is closed.
	changed chan struct{}
}

type chunk struct {
	stream string
	data   []byte
}

// newRing makes a ring that holds max bytes, counting cost for each
// chunk (chunkCost: its memory; 0: its output alone). max is over cost.
func newRing(max, cost int) *ring {
	return &ring{max: max, cost: cost, changed: make(chan struct{})}
}

// chunkCost is what a chunk costs beside its bytes: its entry in chunks
// (a string and a slice header, 40 bytes, in an array that append may
// have doubled) and the rounding up of its allocation.
const chunkCost = 96

// readMax is the most output one read returns: a reader far behind (an
// attach from the start) takes the ring in pieces instead of a copy of all
// of it at once.
const readMax = 64 << 10

// maxChunk is the size past which a stream's output goes into a new chunk:
// dropping the oldest bytes then copies no more than this.
const maxChunk = 32 << 10

// write adds p to stream's output, dropping the oldest bytes (and chunks)
// beyond max.
func (r *ring) write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.chunks); n > 0 && r.chunks[n-1].stream == stream && len(r.chunks[n-1].data) < maxChunk {
		r.chunks[n-1].data = append(r.chunks[n-1].data, p...)
	} else {
		r.chunks = append(r.chunks, chunk{stream: stream, data: append([]byte(nil), p...)})
		r.held += r.cost
	}
	r.end += int64(len(p))
	r.held += len(p)
	for r.held > r.max {
		over := r.held - r.max
		first := &r.chunks[0]
		if over >= len(first.data) {
			r.start += int64(len(first.data))
			r.held -= len(first.data) + r.cost
			// The array keeps no reference to a dropped chunk's bytes.
			*first = chunk{}
			r.chunks = r.chunks[1:]
			continue
		}
		first.data = append([]byte(nil), first.data[over:]...)
		r.start += int64(over)
		r.held -= over
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

// read returns the output after offset from, at most readMax bytes of
// it, its new offset, how many bytes after from are gone, whether the
// ring is closed and read returned its last bytes, and a channel closed
// when there is more (closed already when read left some).
func (r *ring) read(from int64) (out []chunk, next, dropped int64, done bool, more <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if from < r.start {
		dropped = r.start - from
		from = r.start
	}
	off, left := r.start, readMax
	for _, c := range r.chunks {
		n := int64(len(c.data))
		if off+n > from && left > 0 {
			skip := max(from-off, 0)
			data := c.data[skip:]
			if len(data) > left {
				data = data[:left]
			}
			out = append(out, chunk{stream: c.stream, data: append([]byte(nil), data...)})
			left -= len(data)
			from += int64(len(data))
		}
		off += n
	}
	if from < r.end {
		return out, from, dropped, false, closedChan
	}
	return out, r.end, dropped, r.closed, r.changed
}

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// ringImage is what a ring holds, as JSON: a process's output kept across
// its keeper's end (a checkpoint ends it) for the next keeper.
type ringImage struct {
	Start  int64        `json:"start"`
	Chunks []imageChunk `json:"chunks"`
}

type imageChunk struct {
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
}

// marshal is r's image.
func (r *ring) marshal() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img := ringImage{Start: r.start}
	for _, c := range r.chunks {
		img.Chunks = append(img.Chunks, imageChunk{Stream: c.stream, Data: c.data})
	}
	return json.Marshal(img)
}

// unmarshalRing is a ring of max and cost that holds what the image b
// held, its offsets as they were, so that a reader's offset goes on; nil
// for what is not an image.
func unmarshalRing(b []byte, max, cost int) *ring {
	var img ringImage
	if json.Unmarshal(b, &img) != nil || img.Start < 0 {
		return nil
	}
	r := newRing(max, cost)
	r.start, r.end = img.Start, img.Start
	for _, c := range img.Chunks {
		if c.Stream != "" {
			r.write(c.Stream, c.Data)
		}
	}
	return r
}
