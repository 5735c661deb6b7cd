package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamLine is one line of a streamed answer and when it arrived.
type streamLine struct {
	at   time.Time
	data []byte
}

// streamEvent is a line of a streamed answer before the last.
type streamEvent struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// postStream posts body to s asking for NDJSON and reads the answer line by
// line as it comes.
func (s *server) postStream(t *testing.T, body string) (int, http.Header, []streamLine) {
	t.Helper()
	return s.postStreamTo(t, "/v1/runs", body)
}

// postStreamTo is postStream to another path.
func (s *server) postStreamTo(t *testing.T, path, body string) (int, http.Header, []streamLine) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	var lines []streamLine
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		lines = append(lines, streamLine{at: time.Now(), data: bytes.Clone(sc.Bytes())})
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading the stream: %v", err)
	}
	return resp.StatusCode, resp.Header, lines
}

// splitStream decodes a streamed answer: its events, and its last line as
// a result (which has no stream key).
func splitStream(t *testing.T, lines []streamLine) ([]streamEvent, result) {
	t.Helper()
	if len(lines) == 0 {
		t.Fatal("empty stream")
	}
	var events []streamEvent
	for _, l := range lines[:len(lines)-1] {
		var e streamEvent
		dec := json.NewDecoder(bytes.NewReader(l.data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || (e.Stream != "stdout" && e.Stream != "stderr") || e.Data == "" {
			t.Fatalf("event %s: %v", l.data, err)
		}
		events = append(events, e)
	}
	last := lines[len(lines)-1].data
	var keys map[string]any
	var res result
	if err := json.Unmarshal(last, &keys); err != nil {
		t.Fatalf("last line %s: %v", last, err)
	}
	if _, ok := keys["stream"]; ok {
		t.Fatalf("last line %s is an event, want the result", last)
	}
	if err := json.Unmarshal(last, &res); err != nil || res.ID == "" {
		t.Fatalf("last line %s is not a result: %v", last, err)
	}
	return events, res
}

func joinStream(events []streamEvent, stream string) (string, int) {
	var b strings.Builder
	n := 0
	for _, e := range events {
		if e.Stream == stream {
			b.WriteString(e.Data)
			n++
		}
	}
	return b.String(), n
}

// TestServeStream asks POST /v1/runs for NDJSON: the output comes as the
// program writes it, the result last; a refused request is answered as
// without streaming.
func TestServeStream(t *testing.T) {
	s := startServer(t)
	prog := "import time\nfor i in range(5):\n    print(f'line {i}', flush=True)\n    time.sleep(0.2)\n"
	body, _ := json.Marshal(map[string]any{"lang": "python", "code": prog})
	code, hdr, lines := s.postStream(t, string(body))
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("answer %d %q, want 200 application/x-ndjson", code, hdr.Get("Content-Type"))
	}
	events, res := splitStream(t, lines)
	stdout, n := joinStream(events, "stdout")
	if want := "line 0\nline 1\nline 2\nline 3\nline 4\n"; stdout != want {
		t.Errorf("stdout events joined = %q, want %q", stdout, want)
	}
	if n < 3 {
		t.Errorf("%d stdout events, want at least 3: the output was not streamed", n)
	}
	var first time.Time
	for i, e := range events {
		if e.Stream == "stdout" {
			first = lines[i].at
			break
		}
	}
	if ahead := lines[len(lines)-1].at.Sub(first); first.IsZero() || ahead < 500*time.Millisecond {
		t.Errorf("first output came %s before the result, want at least 500ms", ahead)
	}
	if res.ExitCode != 0 || res.Status != "exited" || res.Stdout != stdout {
		t.Errorf("result %+v, want exit 0 and stdout %q", res, stdout)
	}

	// Both streams, each whole in the result.
	prog = "import sys\nsys.stderr.write('oops\\n')\nsys.stderr.flush()\nprint('out')\n"
	body, _ = json.Marshal(map[string]any{"lang": "python", "code": prog})
	code, _, lines = s.postStream(t, string(body))
	if code != 200 {
		t.Fatalf("stderr run: %d", code)
	}
	events, res = splitStream(t, lines)
	stderr, n := joinStream(events, "stderr")
	if stderr != "oops\n" || n == 0 || res.Stderr != stderr {
		t.Errorf("stderr events joined = %q (%d events), result stderr %q, want %q", stderr, n, res.Stderr, "oops\n")
	}
	if stdout, _ := joinStream(events, "stdout"); stdout != "out\n" || res.Stdout != stdout {
		t.Errorf("stdout events joined = %q, result %q, want %q", stdout, res.Stdout, "out\n")
	}

	// Refused before it runs: the usual answer.
	code, hdr, data := s.post(t, `{"lang":"python","code":"1","memory":"1k"}`, "Accept", "application/x-ndjson")
	var e struct{ Field, Error string }
	if code != 400 || hdr.Get("Content-Type") != "application/json" || json.Unmarshal(data, &e) != nil || e.Field != "memory" {
		t.Errorf("refused request: %d %q %s, want 400 application/json naming memory", code, hdr.Get("Content-Type"), data)
	}
	// The audit log is as without streaming: one line a request.
	if audit := s.auditLines(t); len(audit) != 3 || audit[0]["status"] != "exited" || audit[2]["http_status"] != float64(400) {
		t.Errorf("audit lines %v", audit)
	}
	s.stop(t)
	assertClean(t)
}

// TestMCPProgress calls run_code with a progress token: the output comes as
// progress notifications while the program runs.
func TestMCPProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type note struct {
		at       time.Time
		token    any
		message  string
		progress float64
	}
	var mu sync.Mutex
	var notes []note
	snapshot := func() []note {
		mu.Lock()
		defer mu.Unlock()
		return append([]note(nil), notes...)
	}
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp")
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, note{time.Now(), req.Params.ProgressToken, req.Params.Message, req.Params.Progress})
		},
	})
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer session.Close()

	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"lang": "python",
		"code": "import time\nfor i in range(3):\n    print(f'step {i}', flush=True)\n    time.sleep(0.3)\n",
	}}
	params.SetProgressToken("run-1")
	res, err := session.CallTool(ctx, params)
	returned := time.Now()
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	var out result
	data, _ := json.Marshal(res.StructuredContent)
	want := "step 0\nstep 1\nstep 2\n"
	if err := json.Unmarshal(data, &out); err != nil || out.Stdout != want {
		t.Errorf("structured content %s", data)
	}
	// The last notification is sent before the result, but the client may
	// hand it over after: wait for it.
	var all string
	deadline := time.Now().Add(5 * time.Second)
	for {
		var b strings.Builder
		for _, n := range snapshot() {
			b.WriteString(n.message)
		}
		if all = b.String(); strings.Contains(all, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, line := range strings.SplitAfter(want, "\n")[:3] {
		if !strings.Contains(all, line) {
			t.Errorf("notifications lack %q: %q", line, all)
		}
	}
	got := snapshot()
	if len(got) < 2 {
		t.Errorf("%d progress notifications, want at least 2: %+v", len(got), got)
	}
	early := 0
	var prev float64
	for i, n := range got {
		if n.token != "run-1" || n.progress <= prev {
			t.Errorf("notification %d: token %v, progress %v after %v", i, n.token, n.progress, prev)
		}
		prev = n.progress
		if n.at.Before(returned) {
			early++
		}
	}
	if early == 0 {
		t.Error("no progress notification came before the call returned")
	}
	session.Close()
	assertClean(t)
}

// TestSessionStream: a call in a python session streams its output as the
// code writes it, through the session's wire, then the result last.
func TestSessionStream(t *testing.T) {
	s := startServer(t)
	resp, err := s.client.Post(s.url+"/v1/sessions", "application/json", strings.NewReader(`{"lang":"python"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	prog := "import time, sys\nfor i in range(5):\n    print(f'line {i}')\n    time.sleep(0.2)\nsys.stderr.write('done\\n')\n"
	body, _ := json.Marshal(map[string]any{"code": prog})
	code, _, lines := s.postStreamTo(t, "/v1/sessions/"+sess.ID+"/runs", string(body))
	if code != 200 {
		t.Fatalf("answer %d", code)
	}
	events, res := splitStream(t, lines)
	stdout, n := joinStream(events, "stdout")
	if want := "line 0\nline 1\nline 2\nline 3\nline 4\n"; stdout != want || n < 3 {
		t.Errorf("stdout events %q in %d, want %q in at least 3", stdout, n, want)
	}
	if stderr, _ := joinStream(events, "stderr"); stderr != "done\n" || res.Stderr != "done\n" {
		t.Errorf("stderr %q, result's %q", stderr, res.Stderr)
	}
	if ahead := lines[len(lines)-1].at.Sub(lines[0].at); ahead < 500*time.Millisecond {
		t.Errorf("first output came %s before the result, want at least 500ms", ahead)
	}
	if res.Session != sess.ID || res.ExitCode != 0 || res.Stdout != stdout {
		t.Errorf("result %+v", res)
	}
	req, _ := http.NewRequest("DELETE", s.url+"/v1/sessions/"+sess.ID, nil)
	if resp, err := s.client.Do(req); err != nil || resp.StatusCode != 204 {
		t.Errorf("delete: %v %v", resp, err)
	}
}
