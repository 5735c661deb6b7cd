package server

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressInterval spaces a call's progress notifications: at most ten a
// second, however many small writes the program makes.
const progressInterval = 100 * time.Millisecond

// stderrPrefix marks the text of a progress message that the program
// wrote to stderr.
const stderrPrefix = "stderr: "

// progress reports a run_code call's output to the client as progress
// notifications on the call's token: the output since the last one as the
// message, the output's bytes so far as the progress. Output is gathered
// and sent at most every progressInterval, by a timer armed only while
// there is some; finish sends the rest. A client slow to read delays the
// notifications, never the program.
type progress struct {
	ctx    context.Context
	token  any
	notify func(context.Context, *mcp.ProgressNotificationParams) error

	mu       sync.Mutex
	text     [2]utf8Text
	pending  strings.Builder
	bytes    int // output bytes in pending
	last     int // the stream pending ends with, -1 if empty
	timer    *time.Timer
	lastSent time.Time
	closed   bool

	// sending keeps notifications in order, one at a time.
	sending sync.Mutex
	sent    int
	failed  bool
}

// newProgress returns the progress of the call req on ctx, nil when its
// client asked for none.
func newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return &progress{ctx: ctx, token: token, notify: req.Session.NotifyProgress, last: -1}
}

// writer is stream's output as an io.Writer for runner.Request.
func (p *progress) writer(stream int) io.Writer {
	return progressWriter{p: p, stream: stream}
}

type progressWriter struct {
	p      *progress
	stream int
}

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.output(w.stream, b)
	return len(b), nil
}

var _ io.Writer = progressWriter{}

func (p *progress) output(stream int, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.add(stream, p.text[stream].next(b))
	if p.pending.Len() > 0 && p.timer == nil {
		p.timer = time.AfterFunc(time.Until(p.lastSent.Add(progressInterval)), p.send)
	}
}

// add appends text of stream to the pending message, with p.mu held.
func (p *progress) add(stream int, text string) {
	if text == "" {
		return
	}
	if stream == stderr && p.last != stderr {
		p.pending.WriteString(stderrPrefix)
	}
	p.pending.WriteString(text)
	p.bytes += len(text)
	p.last = stream
}

// send sends what is pending, if anything.
func (p *progress) send() {
	p.sending.Lock()
	defer p.sending.Unlock()
	p.mu.Lock()
	msg, n := p.pending.String(), p.bytes
	p.pending.Reset()
	p.bytes, p.last, p.timer, p.lastSent = 0, -1, nil, time.Now()
	p.mu.Unlock()
	if msg == "" || p.failed {
		return
	}
	p.sent += n
	err := p.notify(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Message: msg, Progress: float64(p.sent)})
	// A client that cannot be told will not be told more.
	p.failed = err != nil
}

// finish sends the output not sent yet, before the call's result, and
// drops anything written after.
func (p *progress) finish() {
	p.mu.Lock()
	p.closed = true
	for stream := range p.text {
		p.add(stream, p.text[stream].rest())
	}
	if p.timer != nil {
		// A timer that has fired already finds the message gone, or
		// sends it first: send waits for it either way.
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.send()
}
