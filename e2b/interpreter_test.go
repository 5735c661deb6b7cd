package e2b

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/e2b/interp"
)

// TestInterpreterRoute: port 49999 of a sandbox is the code interpreter,
// answering for the sandbox the listener found, in E2B's error form, and
// keeping its contexts for the sandbox's record.
func TestInterpreterRoute(t *testing.T) {
	s := &Server{boxes: map[string]*sandbox{}, cfg: Config{MaxBody: 64}}
	s.interp = interp.New(interpHost{s}, interp.Config{MaxBody: s.cfg.MaxBody})
	sb := &sandbox{ID: "bxs-0123456789abcdef", EnvdToken: "envd"}
	s.boxes[sb.ID] = sb
	h := s.Handler()
	call := func(method, path, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set(headerSandboxID, sb.ID)
		r.Header.Set(headerSandboxPort, "49999")
		r.Header.Set(headerAccessToken, sb.EnvdToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	tests := []struct {
		name, method, path, body string
		code                     int
		says                     string
	}{
		{"health", "GET", "/health", "", 200, `"OK"`},
		{"too large", "POST", "/execute", `{"code":"` + strings.Repeat("x", 100) + `"}`, 413, `{"code":413,"message":"the request body is larger than 64 bytes, the server's --max-body"}`},
		{"other path", "GET", "/kernels", "", 404, `{"code":404,"message":"GET /kernels: the code interpreter serves POST /execute`},
		{"contexts", "GET", "/contexts", "", 200, `"language":"python","cwd":"/home/user"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := call(tc.method, tc.path, tc.body)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("%s %s: %d %s, want %d saying %q", tc.method, tc.path, w.Code, w.Body, tc.code, tc.says)
			}
		})
	}
	if got := s.interp.Contexts(sb.ID); len(got) != 1 || got[0].Language != "python" {
		t.Errorf("contexts kept for the record: %+v, want the default python one", got)
	}
}
