package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/boxer-dev/boxer/runner"
)

// ndjsonType is the media type of a streamed run: one JSON object a line.
const ndjsonType = "application/x-ndjson"

// streamWriteTimeout bounds each write of a streamed answer: a client that
// stops reading without going away would otherwise hold the program's
// output, and the server's shutdown, for as long as it likes.
const streamWriteTimeout = 30 * time.Second

// StreamEvent is one line of a streamed run before the last: output as the
// program wrote it, after secret masking and within output_limit.
type StreamEvent struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// The output streams, as StreamEvent names them.
const (
	stdout = iota
	stderr
)

var streamNames = [...]string{stdout: "stdout", stderr: "stderr"}

// wantsStream reports whether the request accepts application/x-ndjson: a
// caller that does not name it gets the one JSON answer.
func wantsStream(r *http.Request) bool {
	for _, accept := range r.Header.Values("Accept") {
		for _, part := range strings.Split(accept, ",") {
			typ, params, err := mime.ParseMediaType(part)
			if err != nil || typ != ndjsonType {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q == 0 {
				continue
			}
			return true
		}
	}
	return false
}

// ndjsonStream writes a run's answer as it happens: a StreamEvent a line
// while the program runs, the result last. The status line goes out with
// the first line, so that a run refused before its program starts is
// still answered with its own status. Writes come from the two output
// streams' goroutines and the handler's, one at a time; after a failed
// write the rest is dropped, so that a gone client never holds the run
// (net/http cancels the request's context, which ends it).
type ndjsonStream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	text [2]utf8Text
	buf  bytes.Buffer
	// wroteHeader: the status line is out; done: the result is.
	wroteHeader bool
	done        bool
	err         error
}

func newNDJSONStream(w http.ResponseWriter) *ndjsonStream {
	return &ndjsonStream{w: w, rc: http.NewResponseController(w)}
}

// writer is stream's output as an io.Writer for runner.Request; it never
// fails, as the program must never wait on a client that is gone.
func (s *ndjsonStream) writer(stream int) io.Writer {
	return streamWriter{s: s, stream: stream}
}

type streamWriter struct {
	s      *ndjsonStream
	stream int
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.s.output(w.stream, p)
	return len(p), nil
}

var _ io.Writer = streamWriter{}

func (s *ndjsonStream) output(stream int, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.err != nil {
		return
	}
	if data := s.text[stream].next(p); data != "" {
		s.line(StreamEvent{Stream: streamNames[stream], Data: data})
	}
}

// started reports whether the status line has gone out.
func (s *ndjsonStream) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wroteHeader
}

// finish writes what the streams still hold, then res as the last line;
// anything written after is dropped.
func (s *ndjsonStream) finish(res runner.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	for stream := range s.text {
		if data := s.text[stream].rest(); data != "" {
			s.line(StreamEvent{Stream: streamNames[stream], Data: data})
		}
	}
	s.line(res)
	s.done = true
	// The connection may serve another request, which must not inherit
	// the deadline.
	_ = s.rc.SetWriteDeadline(time.Time{})
}

// line writes v as one line and flushes it, with s.mu held.
func (s *ndjsonStream) line(v any) {
	if s.err != nil {
		return
	}
	if !s.wroteHeader {
		s.w.Header().Set("Content-Type", ndjsonType)
		s.w.WriteHeader(http.StatusOK)
		s.wroteHeader = true
	}
	s.buf.Reset()
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if s.err = enc.Encode(v); s.err != nil {
		return
	}
	// Not every ResponseWriter has deadlines (httptest's has none).
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, s.err = s.w.Write(s.buf.Bytes()); s.err == nil {
		// A writer that cannot flush still gets the whole answer, late.
		if err := s.rc.Flush(); !errors.Is(err, http.ErrNotSupported) {
			s.err = err
		}
	}
}

// utf8Text turns one stream's bytes, written in pieces that may cut a
// character in two, into valid UTF-8: a character incomplete at the end
// of a piece waits for the next. The texts joined equal runner.ValidUTF8 of all
// the bytes, which is what runner.Result holds.
type utf8Text struct {
	held [utf8.UTFMax - 1]byte
	n    int
}

// next returns p, after what was held, as text, holding back an
// incomplete character at its end.
func (t *utf8Text) next(p []byte) string {
	b := p
	if t.n > 0 {
		// A fresh array: held is overwritten below.
		b = append(t.held[:t.n:t.n], p...)
	}
	cut := len(b) - incompleteTail(b)
	text := runner.ValidUTF8(b[:cut])
	t.n = copy(t.held[:], b[cut:])
	return text
}

// rest returns what is held, once the stream is over: an incomplete
// character is invalid then.
func (t *utf8Text) rest() string {
	text := runner.ValidUTF8(t.held[:t.n])
	t.n = 0
	return text
}

// incompleteTail is the length of the start of a character that ends b,
// 0 if b ends with a whole character or an invalid byte. Only a lead byte
// followed by fewer continuation bytes than it announces counts, which no
// decoding of b from its start can have consumed.
func incompleteTail(b []byte) int {
	for n := 1; n < utf8.UTFMax && n <= len(b); n++ {
		if i := len(b) - n; utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
