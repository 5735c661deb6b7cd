package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// followHTTP reads a process's output over HTTP to its end.
func followHTTP(t *testing.T, s *server, token, id, ref string) (stdout, stderr string, end *runner.ProcessInfo) {
	t.Helper()
	code, data := sessionHTTP(t, s, token, "GET", "/v1/sessions/"+id+"/processes/"+ref+"/output", "")
	if code != 200 {
		t.Fatalf("output of %s: %d %s", ref, code, data)
	}
	var out, errb bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var ev runner.ProcessEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		switch {
		case ev.Stream == runner.StreamStderr:
			errb.Write(ev.Data)
		case ev.Stream != "":
			out.Write(ev.Data)
		case ev.End != nil:
			end = ev.End
		}
	}
	return out.String(), errb.String(), end
}

// TestSessionProcessesHTTP: a session's processes over HTTP: stdin, the
// output stream, a terminal resized, a signal; what is wrong is a 400
// naming the field, a process it does not have 404; a second token gets
// 404 for every route. Every call is checked against the OpenAPI
// document. On runc and runsc.
func TestSessionProcessesHTTP(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens)
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			base := "/v1/sessions/" + sess.ID + "/processes"
			start := func(body string) runner.ProcessInfo {
				t.Helper()
				code, data := sessionHTTP(t, s, a, "POST", base, body)
				var p runner.ProcessInfo
				if code != 201 || json.Unmarshal(data, &p) != nil || p.PID < 2 {
					t.Fatalf("start %s: %d %s", body, code, data)
				}
				return p
			}
			start(`{"args":["sh","-c","read line; echo got $line; echo err >&2; exit 4"],"stdin":true,"tag":"reader"}`)
			req := sessionRequest(a, "POST", s.url+base+"/reader/stdin?close=true", "hello\n")
			req.Header.Set("Content-Type", "application/octet-stream")
			if code, _, data := sessionDo(t, s, req); code != 204 {
				t.Errorf("stdin: %d %s", code, data)
			}
			stdout, stderr, end := followHTTP(t, s, a, sess.ID, "reader")
			if stdout != "got hello\n" || stderr != "err\n" || end == nil || end.ExitCode == nil || *end.ExitCode != 4 {
				t.Errorf("reader: %q %q %+v", stdout, stderr, end)
			}

			p := start(`{"args":["sh","-c","read x; stty size"],"pty":{"cols":80,"rows":24}}`)
			ref := strings.TrimSpace(string(mustJSON(p.ID)))
			if code, data := sessionHTTP(t, s, a, "POST", base+"/"+ref+"/resize", `{"cols":100,"rows":30}`); code != 204 {
				t.Errorf("resize: %d %s", code, data)
			}
			req = sessionRequest(a, "POST", s.url+base+"/"+ref+"/stdin", "\n")
			req.Header.Set("Content-Type", "application/octet-stream")
			if code, _, data := sessionDo(t, s, req); code != 204 {
				t.Errorf("terminal input: %d %s", code, data)
			}
			if stdout, _, _ := followHTTP(t, s, a, sess.ID, ref); !strings.Contains(stdout, "30 100") {
				t.Errorf("stty size after resize: %q, want 30 100", stdout)
			}

			start(`{"args":["sleep","100"],"tag":"sleeper"}`)
			if code, data := sessionHTTP(t, s, a, "POST", base+"/sleeper/signal", `{"signal":"KILL"}`); code != 204 {
				t.Errorf("signal: %d %s", code, data)
			}
			if _, _, end := followHTTP(t, s, a, sess.ID, "sleeper"); end == nil || end.ExitCode == nil || *end.ExitCode != 137 {
				t.Errorf("sleeper after KILL: %+v, want 137", end)
			}
			code, data = sessionHTTP(t, s, a, "GET", base, "")
			var list struct{ Processes []runner.ProcessInfo }
			if code != 200 || json.Unmarshal(data, &list) != nil || len(list.Processes) != 3 || list.Processes[2].Tag != "sleeper" {
				t.Errorf("list: %d %s", code, data)
			}

			// What is wrong names its field.
			for _, c := range []struct {
				path, body, field string
				// invalid: the document refuses it too.
				invalid bool
			}{
				{base, `{"args":[]}`, "args", true},
				{base, `{"args":["true"],"cwd":"tmp"}`, "cwd", false},
				{base, `{"args":["true"],"pty":{"cols":0,"rows":5}}`, "pty", true},
				{base + "/sleeper/signal", `{"signal":"NOPE"}`, "signal", false},
				{base + "/sleeper/resize", `{"cols":10,"rows":10}`, "pty", false},
			} {
				req := sessionRequest(a, "POST", s.url+c.path, c.body)
				if c.invalid {
					req = invalidRequest(req)
				}
				code, _, data := sessionDo(t, s, req)
				var e struct{ Field string }
				if code != 400 || json.Unmarshal(data, &e) != nil || e.Field != c.field {
					t.Errorf("POST %s %s: %d %s, want 400 naming %s", c.path, c.body, code, data, c.field)
				}
			}
			code, data = sessionHTTP(t, s, a, "POST", base+"/nothing/signal", `{"signal":"TERM"}`)
			if var404(code, data) != "process" {
				t.Errorf("signal to no process: %d %s, want 404 naming process", code, data)
			}

			// Another caller sees none of it.
			for _, c := range []struct{ method, path, body string }{
				{"GET", base, ""},
				{"POST", base, `{"args":["true"]}`},
				{"GET", base + "/reader/output", ""},
				{"POST", base + "/reader/signal", `{"signal":"KILL"}`},
				{"POST", base + "/reader/resize", `{"cols":10,"rows":10}`},
			} {
				if code, data := sessionHTTP(t, s, b, c.method, c.path, c.body); code != 404 {
					t.Errorf("second token %s %s: %d %s, want 404", c.method, c.path, code, data)
				}
			}
			if code, data := sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+sess.ID, ""); code != 204 {
				t.Fatalf("delete: %d %s", code, data)
			}
			s.stop(t)
			assertClean(t)
		})
	}
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// var404 is the field a 404 names ("" for another answer).
func var404(code int, data []byte) string {
	var e struct{ Field string }
	if code != 404 || json.Unmarshal(data, &e) != nil {
		return ""
	}
	return e.Field
}
