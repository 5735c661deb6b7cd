package contract

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Capped keeps the first limit bytes written to it (and passes them on to
// tee, if set) and drains the rest, so the program never blocks on a full
// pipe and boxer's memory never grows past limit.
type Capped struct {
	mu        sync.Mutex
	limit     int64
	n         int64
	Buf       bytes.Buffer
	tee       io.Writer
	truncated bool
	// holding: what is kept is not passed on yet, as it may still be
	// boxer-init's one line saying that it could not execute the program
	// (holdInitLine).
	holding bool
}

var _ io.Writer = (*Capped)(nil)

// NewCapped returns a Capped keeping limit bytes, passing them on to tee.
func NewCapped(limit int64, tee io.Writer) *Capped {
	return &Capped{limit: limit, tee: tee}
}

func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := p
	if room := c.limit - c.n; int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
		c.truncated = true
	}
	if len(keep) > 0 {
		c.n += int64(len(keep))
		c.Buf.Write(keep)
		if c.holding && !mayBeInitLine(c.Buf.Bytes()) {
			c.holding = false
			keep = c.Buf.Bytes()
		}
		if c.tee != nil && !c.holding {
			// A closed terminal must not stop the drain.
			_, _ = c.tee.Write(keep)
		}
	}
	return len(p), nil
}

// HoldInitLine holds back from tee what is written while it may still be
// boxer-init's line (initExecFailure), until release; before anything is
// written.
func (c *Capped) HoldInitLine() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = true
}

// Release ends holdInitLine: what was held is passed on, unless drop.
func (c *Capped) Release(drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding && !drop && c.tee != nil {
		_, _ = c.tee.Write(c.Buf.Bytes())
	}
	c.holding = false
}

// mayBeInitLine says whether b, the start of a stream, may be or become
// boxer-init's one line: its prefix, then a line's text, and no more than
// the line.
func mayBeInitLine(b []byte) bool {
	prefix := initExecPrefix + "exec: "
	if len(b) < len(prefix) {
		return strings.HasPrefix(prefix, string(b))
	}
	i := bytes.IndexByte(b, '\n')
	return bytes.HasPrefix(b, []byte(prefix)) && (i < 0 || i == len(b)-1)
}

// Reset sets how much is kept and where it is passed on, before anything
// is written.
func (c *Capped) Reset(limit int64, tee io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit, c.tee = limit, tee
}

// Text returns what was kept, with invalid UTF-8 replaced.
func (c *Capped) Text() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ValidUTF8(c.Buf.Bytes()), c.truncated
}

// ValidUTF8 replaces each invalid byte with U+FFFD, as Python's
// errors="replace" does (strings.ToValidUTF8 would merge a run into one).
func ValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

// EOFReader closes eof when its reader is exhausted (or fails).
type EOFReader struct {
	// Reader is what is read.
	Reader io.Reader
	// EOF is closed once Reader is exhausted or fails.
	EOF  chan struct{}
	once sync.Once
}

func (e *EOFReader) Read(p []byte) (int, error) {
	n, err := e.Reader.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.EOF) })
	}
	return n, err
}
