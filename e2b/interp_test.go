package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// TestCellEvent: each record of a cell is E2B's event, as the SDK's
// parser reads it.
func TestCellEvent(t *testing.T) {
	tests := []struct {
		name string
		rec  runner.CellRecord
		want string
	}{
		{"count", runner.CellRecord{Kind: "count", Count: 3}, `{"execution_count":3,"type":"number_of_executions"}`},
		{"main result", runner.CellRecord{Kind: "result", Main: true, Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"42"`)}}, `{"is_main_result":true,"text":"42","type":"result"}`},
		{"a str's quotes dropped", runner.CellRecord{Kind: "result", Main: true, Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"'hi'"`)}}, `{"is_main_result":true,"text":"hi","type":"result"}`},
		{"figure", runner.CellRecord{Kind: "result", Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"<Figure size 640x480 with 1 Axes>"`), "image/png": json.RawMessage(`"iVBOR"`)}}, `{"is_main_result":false,"png":"iVBOR","text":"<Figure size 640x480 with 1 Axes>","type":"result"}`},
		{"formats", runner.CellRecord{Kind: "result", Main: true, Data: map[string]json.RawMessage{"text/html": json.RawMessage(`"<b>"`), "application/json": json.RawMessage(`{"a":1}`), "text/x-other": json.RawMessage(`"o"`)}}, `{"extra":{"text/x-other":"o"},"html":"<b>","is_main_result":true,"json":{"a":1},"type":"result"}`},
		{"error", runner.CellRecord{Kind: "error", Name: "ZeroDivisionError", Value: "division by zero", Traceback: "Traceback..."}, `{"name":"ZeroDivisionError","traceback":"Traceback...","type":"error","value":"division by zero"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeEvent(cellEvent(tc.rec))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want+"\n" {
				t.Errorf("event = %s, want %s", got, tc.want)
			}
		})
	}
	if ev := cellEvent(runner.CellRecord{Kind: "other"}); ev != nil {
		t.Errorf("unknown record: %v, want nil", ev)
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`'hi'`: "hi", `"hi"`: "hi", `'`: `'`, `42`: "42", `'a"`: `'a"`, `''`: ""} {
		if got := unquote(in); got != want {
			t.Errorf("unquote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExecStream: output split inside a character comes out whole, each
// event a line, end to end.
func TestExecStream(t *testing.T) {
	rec := httptest.NewRecorder()
	e := newExecStream(rec, func() { t.Error("gone called") })
	out, errs := output{e: e, kind: "stdout"}, output{e: e, kind: "stderr", tail: 1}
	e.record(runner.CellRecord{Kind: "count", Count: 1})
	snow := []byte("☃\n")
	_, _ = out.Write(append([]byte("a"), snow[:1]...))
	_, _ = errs.Write([]byte("warn\n"))
	_, _ = out.Write(snow[1:])
	_, _ = out.Write(snow[:2])
	e.flush()
	e.send(map[string]any{"type": "end_of_execution"})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Errorf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if ev["type"] == "stdout" || ev["type"] == "stderr" {
			if ts, _ := ev["timestamp"].(string); ts == "" {
				t.Errorf("%s event without a timestamp: %s", ev["type"], line)
			}
			got = append(got, ev["type"].(string)+":"+ev["text"].(string))
		} else {
			got = append(got, ev["type"].(string))
		}
	}
	want := []string{"number_of_executions", "stdout:a", "stderr:warn\n", "stdout:☃\n", "stdout:\ufffd\ufffd", "end_of_execution"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestCompleteUTF8(t *testing.T) {
	tests := []struct{ in, text, rest string }{
		{"abc", "abc", ""},
		{"a\xe2\x98", "a", "\xe2\x98"},
		{"a\xe2\x98\x83", "a☃", ""},
		{"\xf0\x9f\x98", "", "\xf0\x9f\x98"},
		{"a\xff", "a\xff", ""},
	}
	for _, tc := range tests {
		text, rest := completeUTF8([]byte(tc.in))
		if text != tc.text || string(rest) != tc.rest {
			t.Errorf("completeUTF8(%q) = %q, %q; want %q, %q", tc.in, text, rest, tc.text, tc.rest)
		}
	}
}

// TestInterpBadRequests: what the code interpreter refuses before any
// call, each naming what is wrong.
func TestInterpBadRequests(t *testing.T) {
	s := &Server{boxes: map[string]*sandbox{}, cfg: Config{MaxBody: 1 << 20}}
	sb := &sandbox{ID: "bxs-0123456789abcdef"}
	s.boxes[sb.ID] = sb
	h := s.interpreterHandler()
	tests := []struct {
		name, method, path, body string
		code                     int
		says                     string
	}{
		{"r", "POST", "/execute", `{"code":"1","language":"r"}`, 400, `language \"r\" is not available: boxer's code interpreter runs python, bash, javascript (js) and typescript (ts)`},
		{"bash and context", "POST", "/execute", `{"code":"1","language":"bash","context_id":"x"}`, 400, "context_id and language"},
		{"both", "POST", "/execute", `{"code":"1","language":"python","context_id":"x"}`, 400, "context_id and language"},
		{"unknown field", "POST", "/execute", `{"code":"1","kernel":"x"}`, 400, `unknown field \"kernel\"`},
		{"no code", "POST", "/execute", `{}`, 400, "code is required"},
		{"bad env", "POST", "/execute", `{"code":"1","env_vars":{"A=B":"1"}}`, 400, "env_vars"},
		{"unknown context", "POST", "/execute", `{"code":"1","context_id":"nope"}`, 404, "context nope not found"},
		{"create r", "POST", "/contexts", `{"language":"r"}`, 400, `language \"r\"`},
		{"relative cwd", "POST", "/contexts", `{"cwd":"work"}`, 400, "cwd must be an absolute path"},
		{"remove unknown", "DELETE", "/contexts/nope", ``, 404, "context nope not found"},
		{"restart unknown", "POST", "/contexts/nope/restart", ``, 404, "context nope not found"},
		{"other path", "GET", "/kernels", ``, 404, "POST /execute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)).WithContext(withSandbox(t.Context(), sb))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("%s %s: %d %s, want %d saying %q", tc.method, tc.path, w.Code, w.Body, tc.code, tc.says)
			}
		})
	}
	// The default context is listed, and cannot be removed.
	r := httptest.NewRequest("GET", "/contexts", nil).WithContext(withSandbox(t.Context(), sb))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var list []codeContext
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list) != 1 || list[0].Language != "python" || list[0].Cwd != "/home/user" || len(list[0].ID) != 36 {
		t.Fatalf("contexts: %s (%v)", w.Body, err)
	}
	r = httptest.NewRequest("DELETE", "/contexts/"+list[0].ID, nil).WithContext(withSandbox(t.Context(), sb))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "default context") {
		t.Errorf("removing the default context: %d %s", w.Code, w.Body)
	}
	// The default bash context is made once, listed after python's as a
	// plain E2B Context.
	bash, driver := s.defaultContext(sb, "bash")
	again, _ := s.defaultContext(sb, "bash")
	if driver != bash.ID || again.ID != bash.ID || bash.Language != "bash" || bash.Cwd != "/home/user" {
		t.Errorf("default bash context: %+v (driver %q), then %+v", bash, driver, again)
	}
	r = httptest.NewRequest("GET", "/contexts", nil).WithContext(withSandbox(t.Context(), sb))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	want := `[{"id":"` + list[0].ID + `","language":"python","cwd":"/home/user"},{"id":"` + bash.ID + `","language":"bash","cwd":"/home/user"}]`
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Errorf("contexts = %s, want %s", got, want)
	}
}

// TestCheckLanguage: the languages a cell or context may name, as E2B's
// server takes them (any case, spaces around), python when none.
func TestCheckLanguage(t *testing.T) {
	for in, want := range map[string]string{"": "python", "python": "python", " Python ": "python", "bash": "bash", "BASH": "bash", "js": "javascript", "JavaScript": "javascript", "ts": "typescript", "typescript": "typescript", "r": "", "sh": "", "node": ""} {
		got, err := checkLanguage(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("checkLanguage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
