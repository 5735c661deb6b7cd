package integration

// Statuses a client generated from server/openapi.json must know, answered
// by a real server and checked against the document.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// TestOpenAPIPausedAndPaths: on runc and runsc, every operation on a
// paused session's files and processes answers 409 as the document
// declares it (the test's client fails any answer the document does not
// declare); a traversal on files/{path} and a missing file both name the
// field path.
func TestOpenAPIPausedAndPaths(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			tok := "token-a-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(tok+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens)
			code, data := sessionHTTP(t, s, tok, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			base := "/v1/sessions/" + sess.ID
			t.Cleanup(func() { sessionHTTP(t, s, tok, "DELETE", base, "") })
			field := func(data []byte) string {
				var e struct{ Field string }
				_ = json.Unmarshal(data, &e)
				return e.Field
			}
			for _, c := range []struct {
				name, method, path string
				code               int
			}{
				{"traversal", "GET", base + "/files/..%2F..%2Fetc%2Fpasswd", 400},
				{"traversal written", "PUT", base + "/files/..%2Fescape.txt", 400},
				{"missing file", "GET", base + "/files/nosuch.txt", 404},
			} {
				if code, data := sessionHTTP(t, s, tok, c.method, c.path, "x"); code != c.code || field(data) != "path" {
					t.Errorf("%s: %d %s, want %d naming field path", c.name, code, data, c.code)
				}
			}
			if code, data := sessionHTTP(t, s, tok, "POST", base+"/processes", `{"args":["true"],"tag":"t"}`); code != 201 {
				t.Fatalf("start: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, tok, "POST", base+"/pause", ""); code != 200 {
				t.Fatalf("pause: %d %s", code, data)
			}
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/processes", `{"args":["true"]}`},
				{"GET", "/processes", ""},
				{"GET", "/processes/t/output", ""},
				{"POST", "/processes/t/signal", `{"signal":"TERM"}`},
				{"GET", "/files/x.txt", ""},
				{"PUT", "/files/x.txt", "x"},
				{"GET", "/fs/stat?path=/workspace", ""},
				{"GET", "/fs/list?path=/workspace", ""},
				{"GET", "/fs/file?path=/workspace/x.txt", ""},
				{"PUT", "/fs/file?path=/workspace/x.txt", "x"},
				{"POST", "/fs/mkdir", `{"path":"/workspace/d"}`},
				{"POST", "/fs/move", `{"from":"/workspace/a","to":"/workspace/b"}`},
				{"POST", "/fs/remove", `{"path":"/workspace/a"}`},
				{"GET", "/fs/watch?path=/workspace", ""},
			} {
				if code, data := sessionHTTP(t, s, tok, c.method, base+c.path, c.body); code != 409 {
					t.Errorf("%s %s on a paused session: %d %s, want 409", c.method, c.path, code, data)
				}
			}
			if code, data := sessionHTTP(t, s, tok, "POST", base+"/resume", ""); code != 200 {
				t.Errorf("resume: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, tok, "DELETE", base, ""); code != 204 {
				t.Errorf("delete: %d %s", code, data)
			}
		})
	}
	assertClean(t)
}
