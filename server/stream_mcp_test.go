package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type notified struct {
	at     time.Time
	params mcp.ProgressNotificationParams
}

// recorder is a progress's notify that keeps what it is given.
type recorder struct {
	mu   sync.Mutex
	seen []notified
}

func (r *recorder) notify(_ context.Context, p *mcp.ProgressNotificationParams) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, notified{time.Now(), *p})
	return nil
}

func (r *recorder) all() []notified {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notified(nil), r.seen...)
}

// TestProgressCoalesces writes small pieces on both streams for a while:
// the notifications are at least progressInterval apart, carry all the
// output in order of arrival with stderr marked, count its bytes, and the
// last goes out before finish returns.
func TestProgressCoalesces(t *testing.T) {
	rec := &recorder{}
	p := &progress{ctx: context.Background(), token: "tok", notify: rec.notify, last: -1}
	const run = 600 * time.Millisecond
	var nOut, nErr int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		w := p.writer(stdout)
		for end := time.Now().Add(run); time.Now().Before(end); nOut++ {
			_, _ = w.Write([]byte("o"))
			time.Sleep(2 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		w := p.writer(stderr)
		for end := time.Now().Add(run); time.Now().Before(end); nErr++ {
			// "é" cut in two: never sent in halves.
			_, _ = w.Write([]byte("x\xc3"))
			_, _ = w.Write([]byte("\xa9\n"))
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	p.finish()
	seen := rec.all()
	_, _ = p.writer(stdout).Write([]byte("after the end"))

	if max := int(run/progressInterval) + 2; len(seen) < 2 || len(seen) > max {
		t.Errorf("%d notifications in %s, want 2 to %d", len(seen), run, max)
	}
	var all strings.Builder
	var prev float64
	for i, n := range seen {
		if n.params.ProgressToken != "tok" || n.params.Total != 0 || n.params.Message == "" {
			t.Errorf("notification %d: %+v", i, n.params)
		}
		if n.params.Progress <= prev {
			t.Errorf("notification %d: progress %v after %v, want it increasing", i, n.params.Progress, prev)
		}
		prev = n.params.Progress
		// The last is finish's, sent at once.
		if i > 0 && i < len(seen)-1 {
			if gap := n.at.Sub(seen[i-1].at); gap < progressInterval*9/10 {
				t.Errorf("notification %d came %s after the one before, want at least %s", i, gap, progressInterval)
			}
		}
		if e := strings.Index(n.params.Message, "é"); e >= 0 && !strings.Contains(n.params.Message[:e], stderrPrefix) {
			t.Errorf("notification %d: stderr text without %q: %q", i, stderrPrefix, n.params.Message)
		}
		all.WriteString(n.params.Message)
	}
	text := all.String()
	if got := strings.Count(text, "o"); got != nOut {
		t.Errorf("%d stdout bytes sent, want %d", got, nOut)
	}
	if got, gotX := strings.Count(text, "é\n"), strings.Count(text, "x"); got != nErr || gotX != nErr {
		t.Errorf("%d and %d of the stderr pieces sent, want %d", gotX, got, nErr)
	}
	if want := float64(nOut + nErr*len("xé\n")); prev != want {
		t.Errorf("last progress %v, want %v (the output's bytes)", prev, want)
	}
	if strings.Contains(text, "\uFFFD") || strings.Contains(text, "after the end") {
		t.Errorf("sent %q", text)
	}
	if got := rec.all(); len(got) != len(seen) {
		t.Errorf("%d notifications after finish", len(got)-len(seen))
	}
}

// TestProgressOverMCP checks the SDK calls: a call with a progress token
// gets the output as notifications on it, before its result; a call
// without gets none.
func TestProgressOverMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	var tracked []bool
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, call *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		p := newProgress(ctx, call)
		tracked = append(tracked, p != nil)
		if p != nil {
			_, _ = p.writer(stdout).Write([]byte("one\n"))
			_, _ = p.writer(stderr).Write([]byte("two\n"))
			p.finish()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, struct{}{}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	got := make(chan *mcp.ProgressNotificationParams, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}
	params.SetProgressToken("run-1")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	// The first write may go out alone, at once.
	var msgs []string
	for want := "one\nstderr: two\n"; strings.Join(msgs, "") != want; {
		select {
		case n := <-got:
			if n.ProgressToken != "run-1" {
				t.Errorf("notification %+v, want token run-1", n)
			}
			if msgs = append(msgs, n.Message); strings.Join(msgs, "") == want && n.Progress != 8 {
				t.Errorf("last progress %v, want 8", n.Progress)
			}
		case <-ctx.Done():
			t.Fatalf("notifications %q, want %q", msgs, want)
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("call without token: %v %+v", err, res)
	}
	if len(tracked) != 2 || !tracked[0] || tracked[1] {
		t.Errorf("progress made for calls with and without a token: %v, want [true false]", tracked)
	}
}
