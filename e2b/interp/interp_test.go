package interp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeHost holds one sandbox and answers as E2B's listener does, but for
// its cut of what an error quotes.
type fakeHost struct{ sb Sandbox }

func (h fakeHost) Sandbox(context.Context) Sandbox { return h.sb }

func (h fakeHost) Held(id string) bool { return id == h.sb.ID }

func (h fakeHost) WriteError(w http.ResponseWriter, code int, msg string) {
	h.WriteJSON(w, code, map[string]any{"code": code, "message": msg})
}

func (fakeHost) WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (fakeHost) TooLarge(limit int64) string {
	return fmt.Sprintf("the request body is larger than %d bytes", limit)
}

// TestInterpBadRequests: what the code interpreter refuses before any
// call, each naming what is wrong.
func TestInterpBadRequests(t *testing.T) {
	sb := Sandbox{ID: "bxs-0123456789abcdef", Persist: func() {}}
	s := New(fakeHost{sb}, Config{MaxBody: 1 << 20})
	h := s.Handler()
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
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("%s %s: %d %s, want %d saying %q", tc.method, tc.path, w.Code, w.Body, tc.code, tc.says)
			}
		})
	}
	// The default context is listed, and cannot be removed.
	r := httptest.NewRequest("GET", "/contexts", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var list []CodeContext
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list) != 1 || list[0].Language != "python" || list[0].Cwd != "/home/user" || len(list[0].ID) != 36 {
		t.Fatalf("contexts: %s (%v)", w.Body, err)
	}
	r = httptest.NewRequest("DELETE", "/contexts/"+list[0].ID, nil)
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
	r = httptest.NewRequest("GET", "/contexts", nil)
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
