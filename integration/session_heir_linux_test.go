package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSessionOutlivesServer: a session boxer's API made lives on when its
// server is killed (SIGKILL: no shutdown) or stopped by SIGTERM (an
// upgrade), through another boxer command's pass over leftovers, and the
// next server of the namespace takes it over: the same caller's next call
// finds the interpreter's state, another caller still cannot see it, and
// it ends when removed. On runc (SIGKILL) and runsc (SIGTERM).
func TestSessionOutlivesServer(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	tokenA, tokenB := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
	must(t, os.WriteFile(tokens, []byte(tokenA+"\n"+tokenB+"\n"), 0o600))
	for _, c := range []struct {
		rt  string
		sig syscall.Signal
	}{{"runc", syscall.SIGKILL}, {"runsc", syscall.SIGTERM}} {
		rt := c.rt
		t.Run(rt, func(t *testing.T) {
			s := startServer(t, "--token-file", tokens)
			code, data := sessionHTTP(t, s, tokenA, "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`"}`)
			var sess struct{ ID string }
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			if code, data = sessionHTTP(t, s, tokenA, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"x = 41"}`); code != 200 {
				t.Fatalf("first call: %d %s", code, data)
			}
			stopWith(t, s, c.sig, 1)
			// Another boxer command reaps what dead boxer processes left:
			// not this session.
			if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
				t.Fatalf("a run between the servers: %+v", r)
			}
			next := startServer(t, "--token-file", tokens)
			code, data = sessionHTTP(t, next, tokenA, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"print(x + 1)"}`)
			if code != 200 || !strings.Contains(string(data), `"stdout":"42\n"`) {
				t.Fatalf("a call through the next server: %d %s\nits log: %s", code, data, next.log)
			}
			if !strings.Contains(next.log.String(), "took over 1 session") {
				t.Errorf("the next server does not say it took the session over: %s", next.log)
			}
			if code, data = sessionHTTP(t, next, tokenB, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"print(x)"}`); code != 404 {
				t.Errorf("another caller's call: %d %s, want 404", code, data)
			}
			if code, data = sessionHTTP(t, next, tokenA, "DELETE", "/v1/sessions/"+sess.ID, ""); code != 204 {
				t.Errorf("remove: %d %s", code, data)
			}
			next.stop(t)
			assertClean(t)
		})
	}
}
