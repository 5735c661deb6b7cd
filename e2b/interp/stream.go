package interp

// The code interpreter's /execute answer: E2B's JSON lines, one event a
// line, streamed as the cell runs.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/boxer-dev/boxer/runner"
)

// cellKeepalive is how often a quiet stream gets a keepalive line (which
// the SDKs skip), as E2B's server sends them: a write to a client that
// went away without closing fails, and the cell is interrupted.
const cellKeepalive = 5 * time.Second

// resultKeys are E2B's names for a result's formats (its Result model).
var resultKeys = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
	// What E2B's template adds: a DataFrame's columns, a figure's chart.
	"e2b/data":  "data",
	"e2b/chart": "chart",
}

// execStream writes one /execute answer. The status line waits for the
// first event, so that a call refused before it ran still gets a status
// of its own.
type execStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	last    time.Time
	// failed is set by the first write that fails (the client went away);
	// gone is then called once.
	failed bool
	gone   func()
	// The streams' incomplete UTF-8 sequences, kept for their next write.
	tails [2][]byte
}

func newExecStream(w http.ResponseWriter, gone func()) *execStream {
	return &execStream{w: w, rc: http.NewResponseController(w), gone: gone}
}

// send writes one event and flushes it.
func (e *execStream) send(event map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sendLocked(event)
}

func (e *execStream) sendLocked(event map[string]any) {
	if e.failed {
		return
	}
	line, err := encodeEvent(event)
	if err != nil {
		line, _ = encodeEvent(map[string]any{"type": "error", "name": "BoxerError", "value": "encoding an event: " + err.Error()})
	}
	if !e.started {
		e.started = true
		e.w.Header().Set("Content-Type", "application/x-ndjson")
		e.w.WriteHeader(http.StatusOK)
	}
	_, err = e.w.Write(line)
	if err == nil {
		err = e.rc.Flush()
	}
	e.last = time.Now()
	if err != nil {
		e.failed = true
		e.gone()
	}
}

// encodeEvent writes an event as a line of JSON, HTML as it is (a
// result's html).
func encodeEvent(event map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(event)
	return b.Bytes(), err
}

// begun tells whether the status line is written.
func (e *execStream) begun() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// keepalive writes a keepalive line every cellKeepalive of quiet, until
// stop is closed.
func (e *execStream) keepalive(stop <-chan struct{}) {
	t := time.NewTicker(cellKeepalive)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			e.mu.Lock()
			if e.started && time.Since(e.last) >= cellKeepalive {
				e.sendLocked(map[string]any{"type": "keepalive"})
			}
			e.mu.Unlock()
		}
	}
}

// output is a writer of one stream's events ("stdout" or "stderr").
type output struct {
	e    *execStream
	kind string
	tail int
}

func (o output) Write(p []byte) (int, error) {
	o.e.mu.Lock()
	defer o.e.mu.Unlock()
	text, rest := completeUTF8(append(o.e.tails[o.tail], p...))
	o.e.tails[o.tail] = rest
	if text != "" {
		o.e.sendLocked(map[string]any{"type": o.kind, "text": text, "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
	}
	return len(p), nil
}

// flush sends what the streams held back (an incomplete UTF-8 sequence at
// the end of the cell's output).
func (e *execStream) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, kind := range []string{"stdout", "stderr"} {
		if len(e.tails[i]) > 0 {
			e.sendLocked(map[string]any{"type": kind, "text": string(e.tails[i]), "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
			e.tails[i] = nil
		}
	}
}

// completeUTF8 splits b into its text up to the last complete UTF-8
// sequence and the incomplete one after it: a chunk of output may end in
// the middle of a character.
func completeUTF8(b []byte) (string, []byte) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return string(b[:i]), append([]byte(nil), b[i:]...)
			}
			break
		}
	}
	return string(b), nil
}

// record sends a cell's record as E2B's event.
func (e *execStream) record(rec runner.CellRecord) {
	if ev := cellEvent(rec); ev != nil {
		e.send(ev)
	}
}

// cellEvent is E2B's event for a cell's record, or nil.
func cellEvent(rec runner.CellRecord) map[string]any {
	switch rec.Kind {
	case "count":
		return map[string]any{"type": "number_of_executions", "execution_count": rec.Count}
	case "error":
		return map[string]any{"type": "error", "name": rec.Name, "value": rec.Value, "traceback": rec.Traceback}
	case "result":
		ev := map[string]any{"type": "result", "is_main_result": rec.Main}
		extra := map[string]json.RawMessage{}
		for mime, v := range rec.Data {
			key, ok := resultKeys[mime]
			if !ok {
				extra[mime] = v
				continue
			}
			if key == "text" {
				var s string
				if json.Unmarshal(v, &s) == nil {
					ev[key] = unquote(s)
				}
				continue
			}
			ev[key] = v
		}
		if len(extra) > 0 {
			ev["extra"] = extra
		}
		return ev
	}
	return nil
}

// unquote drops the quotes of a str's repr, as E2B's server does for a
// result's text: 'hi' is hi.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'' || s[0] == '"' && s[len(s)-1] == '"') {
		return s[1 : len(s)-1]
	}
	return s
}
