package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionCall runs code in session id through the CLI and decodes the
// result.
func sessionCall(t *testing.T, id, code string, flags ...string) (result, run) {
	t.Helper()
	r := boxer(t, nil, append(append([]string{"session", "run", id, "--json"}, flags...), "-c", code)...)
	var res result
	if r.code != 125 || strings.HasPrefix(r.stdout, "{") {
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("session run: bad JSON (%v): %q %q", err, r.stdout, r.stderr)
		}
	}
	return res, r
}

func createSession(t *testing.T, flags ...string) string {
	t.Helper()
	r := boxer(t, nil, append([]string{"session", "create"}, flags...)...)
	if r.code != 0 {
		t.Fatalf("session create %v: %d %s", flags, r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	// A test that fails halfway leaves nothing to the next.
	t.Cleanup(func() { boxer(t, nil, "session", "rm", id) })
	return id
}

// TestSessionCLI: separate CLI processes share one python interpreter and
// one workspace; a call past its timeout is interrupted and the next one
// finds its state; an interpreter that ignores the interrupt ends the
// session; the sandbox's PID 1 cannot be killed from inside; rm leaves
// nothing. On runc and runsc.
func TestSessionCLI(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "python", "--runtime", rt, "--timeout", "20s")
			if res, r := sessionCall(t, id, "x = 41\nopen('notes.txt', 'w').write('kept')"); res.ExitCode != 0 {
				t.Fatalf("call 1: %+v %s", res, r.stderr)
			}
			res, r := sessionCall(t, id, "print(x + 1, open('notes.txt').read())")
			if res.ExitCode != 0 || res.Stdout != "42 kept\n" || res.Session != id || res.DurationMs <= 0 || res.CPUTimeMs <= 0 || res.MemoryPeakBytes == 0 {
				t.Fatalf("call 2: %+v %s", res, r.stderr)
			}
			// An exception is the call's failure, not the session's.
			res, _ = sessionCall(t, id, "raise ValueError('boom')")
			if res.ExitCode != 1 || !strings.Contains(res.Stderr, "ValueError: boom") || strings.Contains(res.Stderr, "boxer-session") {
				t.Errorf("raise: %+v", res)
			}
			// Files both ways.
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "in.csv"), []byte("a,b\n1,2\n"), 0o644))
			if r := boxer(t, nil, "session", "cp", filepath.Join(dir, "in.csv"), id+":data/in.csv"); r.code != 0 {
				t.Fatalf("cp in: %s", r.stderr)
			}
			if res, _ := sessionCall(t, id, "import csv; print(list(csv.reader(open('data/in.csv')))[1])"); res.Stdout != "['1', '2']\n" {
				t.Errorf("file copied in: %+v", res)
			}
			if r := boxer(t, nil, "session", "cp", id+":notes.txt", filepath.Join(dir, "out.txt")); r.code != 0 {
				t.Fatalf("cp out: %s", r.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "kept" {
				t.Errorf("file copied out: %q", b)
			}
			// A call has a run's hardening: no capabilities, not root,
			// no_new_privs and the seccomp filter.
			res, _ = sessionCall(t, id, "import os; s = open('/proc/self/status').read(); print(os.getuid(), [l.split()[1] for l in s.splitlines() if l.split(':')[0] in ('CapEff', 'CapPrm', 'NoNewPrivs', 'Seccomp')])")
			if want := "65534 ['0000000000000000', '0000000000000000', '1', '2']\n"; res.Stdout != want {
				t.Errorf("hardening of a call: %q, want %q (%s)", res.Stdout, want, res.Stderr)
			}
			// The workspace is read through its root: a symlink the sandbox
			// plants, to a file or a directory of the host's, leads nowhere.
			sessionCall(t, id, "import os; os.symlink('/etc/hostname', 'host'); os.symlink('/etc', 'etc'); os.mkdir('d'); os.symlink('/etc/passwd', 'd/passwd')")
			for _, src := range []string{"host", "etc/hostname", "etc"} {
				dst := filepath.Join(dir, "leak-"+strings.ReplaceAll(src, "/", "-"))
				r := boxer(t, nil, "session", "cp", id+":"+src, dst)
				if b, err := os.ReadFile(dst); r.code != 125 || err == nil && len(b) > 0 {
					t.Errorf("cp out %s: %d %q, read %q", src, r.code, r.stderr, b)
				}
			}
			if r := boxer(t, nil, "session", "cp", id+":d", filepath.Join(dir, "d")); r.code != 0 || !strings.Contains(r.stderr, "skipped 1") {
				t.Errorf("cp out d: %d %q", r.code, r.stderr)
			}
			if _, err := os.Lstat(filepath.Join(dir, "d", "passwd")); err == nil {
				t.Error("cp out followed a symlink")
			}
			// An endless loop times out; the interpreter comes back.
			res, _ = sessionCall(t, id, "while True: pass", "--timeout", "1s")
			if res.Status != "timeout" || res.ExitCode != 124 || res.SessionEnded != "" {
				t.Fatalf("loop: %+v", res)
			}
			if res, _ := sessionCall(t, id, "print(x)"); res.Stdout != "41\n" {
				t.Fatalf("after the timeout: %+v", res)
			}
			// One that ignores the interrupt ends the session, and says so.
			res, _ = sessionCall(t, id, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", "--timeout", "1s")
			if res.Status != "timeout" || res.SessionEnded != "interpreter_stuck" {
				t.Fatalf("stuck: %+v", res)
			}
			_, r = sessionCall(t, id, "print(x)")
			if r.code != 125 || !strings.Contains(r.stderr, "session "+id+" has ended (its interpreter did not stop") {
				t.Errorf("after the session ended: %d %q, want why it ended", r.code, r.stderr)
			}
			assertClean(t)

			// A kill of PID 1 from inside never extends the session: runc's
			// init ignores it (the session goes on), gVisor's ends the
			// sandbox (the session ends, and says so).
			id = createSession(t, "--lang", "python", "--runtime", rt)
			sessionCall(t, id, "import os, signal\ntry:\n    os.kill(1, signal.SIGKILL)\nexcept Exception as e:\n    print(e)")
			res, r = sessionCall(t, id, "print(2)")
			switch {
			case rt == "runc" && res.Stdout != "2\n":
				t.Errorf("after kill 1 on runc: %+v %s", res, r.stderr)
			case rt == "runsc" && res.Stdout != "2\n" && r.code != 125:
				t.Errorf("after kill 1 on runsc: %+v %s", res, r.stderr)
			}
			boxer(t, nil, "session", "rm", id)
			assertClean(t)

			// bash: files persist, each call is a fresh process.
			id = createSession(t, "--lang", "bash", "--runtime", rt)
			sessionCall(t, id, "echo hi > f; cd /tmp; X=1")
			if res, _ := sessionCall(t, id, `cat f; pwd; echo "[$X]"`); res.Stdout != "hi\n/workspace\n[]\n" {
				t.Errorf("bash: %+v", res)
			}
			if r := boxer(t, nil, "session", "ls"); !strings.Contains(r.stdout, id) {
				t.Errorf("ls: %s", r.stdout)
			}
			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Errorf("rm: %s", r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionExpiry: the idle timeout ends a session at the next boxer
// call; its lifetime, whose end may move (SetSessionTimeout), is ended by
// the session's keeper with no boxer command run; its sandbox's PID 1
// waits for the longest it may live, the maximum lifetime, and ends it by
// itself then, with no boxer process running at all.
func TestSessionExpiry(t *testing.T) {
	id := createSession(t, "--lang", "python", "--idle-timeout", "2s")
	time.Sleep(3500 * time.Millisecond)
	_, r := sessionCall(t, id, "print(1)")
	if r.code != 125 || !strings.Contains(r.stderr, "idle too long") {
		t.Errorf("idle: %d %q", r.code, r.stderr)
	}
	assertClean(t)

	id = createSession(t, "--lang", "bash", "--lifetime", "3s")
	ctx := context.Background()
	c, err := client.LoadContainer(ctx, id)
	must(t, err)
	spec, err := c.Spec(ctx)
	must(t, err)
	// PID 1, boxer-init, ends its child, the session's process server,
	// at the maximum lifetime.
	args := spec.Process.Args
	if secs, _ := strconv.Atoi(args[min(2, len(args)-1)]); len(args) < 5 || args[1] != "-t" || secs < 86000 || secs > 86401 || args[4] != "/code/.boxer-procd" {
		t.Errorf("PID 1 %q, want boxer-init -t for the maximum lifetime, 24h, over the process server", args)
	}
	// Its keeper ends it at its lifetime, with no boxer command run.
	for deadline := time.Now().Add(8 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := client.LoadContainer(ctx, id); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s still there 8s after its 3s lifetime, with its keeper running", id)
		}
	}
	if r := boxer(t, nil, "session", "ls"); strings.Contains(r.stdout, id) {
		t.Errorf("ls lists an ended session: %s", r.stdout)
	}
	assertClean(t)
}

// sessionHTTP makes one HTTP request with a token and returns its answer.
func sessionHTTP(t *testing.T, s *server, token, method, path, body string) (int, []byte) {
	t.Helper()
	code, _, data := sessionDo(t, s, sessionRequest(token, method, s.url+path, body))
	return code, data
}

// sessionRequest is a request with a token: its body a file's bytes for a
// PUT, else JSON.
func sessionRequest(token, method, target, body string) *http.Request {
	req, _ := http.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	switch {
	case method == "PUT":
		req.Header.Set("Content-Type", "application/octet-stream")
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func sessionDo(t *testing.T, s *server, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// TestSessionHTTP: a session over HTTP keeps state and files; a second
// token cannot see, run in, read or remove it (404); idle sessions are
// ended by the server without a call; SIGKILL of the server leaves the
// session for the next server, and its removal leaves nothing.
func TestSessionHTTP(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens, "--max-sessions", "2", "--max-sessions-per-caller", "2")
			// What a session does not take, and a secret the server does not
			// hold, is refused, naming it.
			for _, field := range []string{`"code":"1"`, `"command":["true"]`, `"secrets":["A"]`, `"return_files":["*"]`, `"stdin":"x"`} {
				name, _, _ := strings.Cut(strings.Trim(field, `"`), `"`)
				req := sessionRequest(a, "POST", s.url+"/v1/sessions", `{"lang":"python",`+field+`}`)
				if name != "secrets" {
					// The document refuses these fields; a secret's name
					// only the server can check.
					req = invalidRequest(req)
				}
				code, _, data := sessionDo(t, s, req)
				var e struct{ Field, Error string }
				if code != 400 || json.Unmarshal(data, &e) != nil || e.Field != name || e.Error == "" {
					t.Errorf("session with %s: %d %s, want 400 naming %s", field, code, data, name)
				}
			}
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil || !sess.Interpreter {
				t.Fatalf("create: %d %s", code, data)
			}
			// The cap: a second session, then 429, then room again.
			code, data = sessionHTTP(t, s, b, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`"}`)
			var second runner.Session
			if code != 201 || json.Unmarshal(data, &second) != nil {
				t.Fatalf("second session: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, b, "POST", "/v1/sessions", `{"lang":"bash"}`); code != 429 {
				t.Errorf("third session past --max-sessions 2: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, b, "DELETE", "/v1/sessions/"+second.ID, ""); code != 204 {
				t.Fatalf("delete: %d %s", code, data)
			}
			runs := "/v1/sessions/" + sess.ID + "/runs"
			if code, data := sessionHTTP(t, s, a, "POST", runs, `{"code":"x = 41"}`); code != 200 {
				t.Fatalf("call 1: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "POST", runs, `{"code":"print(x + 1)"}`)
			var res result
			if code != 200 || json.Unmarshal(data, &res) != nil || res.Stdout != "42\n" {
				t.Fatalf("call 2: %d %s", code, data)
			}
			// The file's path is one parameter, its slash escaped, as a
			// client made from the OpenAPI document sends it.
			file := "/v1/sessions/" + sess.ID + "/files/" + url.PathEscape("sub/f.bin")
			if code, data := sessionHTTP(t, s, a, "PUT", file, "\x00\x01binary"); code != 204 {
				t.Fatalf("put: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "GET", file, ""); code != 200 || string(data) != "\x00\x01binary" {
				t.Errorf("get: %d %q", code, data)
			}
			// A text file is bytes too, never sniffed into a page.
			page := "/v1/sessions/" + sess.ID + "/files/page.html"
			if code, data := sessionHTTP(t, s, a, "PUT", page, "<html><script>alert(1)</script>"); code != 204 {
				t.Fatalf("put: %d %s", code, data)
			}
			code, hdr, data := sessionDo(t, s, sessionRequest(a, "GET", s.url+page, ""))
			if code != 200 || hdr.Get("Content-Type") != "application/octet-stream" || hdr.Get("X-Content-Type-Options") != "nosniff" || string(data) != "<html><script>alert(1)</script>" {
				t.Errorf("get page.html: %d %q %q %q, want 200 application/octet-stream nosniff", code, hdr.Get("Content-Type"), hdr.Get("X-Content-Type-Options"), data)
			}
			// The other token: as if the session did not exist.
			for _, c := range []struct{ method, path, body string }{
				{"POST", runs, `{"code":"print(x)"}`}, {"GET", file, ""}, {"PUT", file, "x"}, {"DELETE", "/v1/sessions/" + sess.ID, ""},
			} {
				if code, data := sessionHTTP(t, s, b, c.method, c.path, c.body); code != 404 {
					t.Errorf("token b %s %s: %d %s", c.method, c.path, code, data)
				}
			}
			if _, data := sessionHTTP(t, s, b, "GET", "/v1/sessions", ""); strings.Contains(string(data), sess.ID) {
				t.Errorf("token b lists a's session: %s", data)
			}
			if _, data := sessionHTTP(t, s, a, "GET", "/v1/sessions", ""); !strings.Contains(string(data), sess.ID) {
				t.Errorf("token a does not list its session: %s", data)
			}
			// Idle: the server ends it by itself.
			code, data = sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`","idle_timeout":"1s"}`)
			var idle runner.Session
			if code != 201 || json.Unmarshal(data, &idle) != nil {
				t.Fatalf("create idle: %d %s", code, data)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				if _, err := client.LoadContainer(context.Background(), idle.ID); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the server did not end an idle session")
				}
				time.Sleep(200 * time.Millisecond)
			}
			events := map[string]string{}
			for end := time.Now().Add(5 * time.Second); events["session_ended "+idle.ID] == "" && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				for _, l := range s.auditLines(t) {
					// Every line has an event now: a run's has no session.
					if ev, _ := l["event"].(string); ev != "" {
						id, _ := l["session"].(string)
						events[ev+" "+id], _ = l["reason"].(string)
					}
				}
			}
			if _, ok := events["session_created "+sess.ID]; !ok || events["session_ended "+idle.ID] != "idle" {
				t.Errorf("audit events: %v", events)
			}
			if _, ok := events["session_run "+sess.ID]; !ok {
				t.Errorf("audit has no call: %v", events)
			}
			// SIGKILL: the session is left for the next server
			// (TestSessionOutlivesServer), through the next command's pass
			// over leftovers, and ends by its own life: here removed.
			must(t, s.cmd.Process.Kill())
			_ = s.cmd.Wait()
			if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
				t.Fatalf("run: %s", r.stderr)
			}
			if _, err := client.LoadContainer(context.Background(), sess.ID); err != nil {
				t.Fatalf("want the killed server's session to live on: %v", err)
			}
			if r := boxer(t, nil, "session", "rm", sess.ID); r.code != 0 {
				t.Fatalf("session rm: %s", r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionMCP: create_session, then run_code with its session_id keeps
// state; the session ends when the client disconnects.
func TestSessionMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp", "--warm-size", "0")
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "create_session", Arguments: map[string]any{"lang": "python"}})
	if err != nil || res.IsError {
		t.Fatalf("create_session: %v %+v", err, res)
	}
	var sess runner.Session
	data, _ := json.Marshal(res.StructuredContent)
	must(t, json.Unmarshal(data, &sess))
	var out result
	for _, code := range []string{"x = 41", "print(x + 1)"} {
		res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": sess.ID, "code": code}})
		if err != nil || res.IsError {
			t.Fatalf("run_code %q: %v %+v", code, err, res)
		}
		data, _ = json.Marshal(res.StructuredContent)
		must(t, json.Unmarshal(data, &out))
	}
	if out.Stdout != "42\n" || out.Session != sess.ID {
		t.Errorf("run_code in the session: %+v", out)
	}
	// Commands beside the interpreter: foreground, background, listed,
	// killed.
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", tool, args, err, res)
		}
		var m map[string]any
		data, _ := json.Marshal(res.StructuredContent)
		must(t, json.Unmarshal(data, &m))
		return m
	}
	ex := call("exec_command", map[string]any{"session_id": sess.ID, "command": "echo from sh; echo oops >&2; exit 2"})
	if p, _ := ex["process"].(map[string]any); ex["stdout"] != "from sh\n" || ex["stderr"] != "oops\n" || p["exit_code"] != 2.0 {
		t.Errorf("exec_command: %v", ex)
	}
	call("exec_command", map[string]any{"session_id": sess.ID, "command": "sleep 300", "background": true, "tag": "nap"})
	list := call("list_processes", map[string]any{"session_id": sess.ID})
	if ps, _ := list["processes"].([]any); len(ps) != 2 || ps[1].(map[string]any)["tag"] != "nap" || ps[1].(map[string]any)["running"] != true {
		t.Errorf("list_processes: %v", list)
	}
	call("kill_process", map[string]any{"session_id": sess.ID, "process": "nap", "signal": "KILL"})
	ex = call("exec_command", map[string]any{"session_id": sess.ID, "command": "sleep 5", "timeout": "1s"})
	if ex["timed_out"] != true {
		t.Errorf("exec_command past its timeout: %v", ex)
	}
	must(t, session.Close())
	_ = cmd.Wait()
	assertClean(t)
}

// wireOf is python that finds the session driver's wire in the
// interpreter, as hostile code in a call can.
const wireOf = "import gc, os\nw = [o for o in gc.get_objects() if type(o).__name__ == 'Wire'][0]\n"

// TestSessionWire: a call's code can reach the channel between boxer and
// its interpreter (it runs in that interpreter); what it writes there ends
// its own session cleanly, never boxer, and frames it forges for other
// calls are dropped. Input goes through the channel whole, and input a call
// does not read holds up nothing. On runc and runsc.
func TestSessionWire(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			// Input: 300 KiB read whole; 300 KiB left unread.
			id := createSession(t, "--lang", "python", "--runtime", rt, "--timeout", "20s")
			in := filepath.Join(t.TempDir(), "in")
			data := strings.Repeat("0123456789abcdef", 300<<10/16)
			must(t, os.WriteFile(in, []byte(data), 0o644))
			res, r := sessionCall(t, id, "import sys, hashlib\nb = sys.stdin.buffer.read()\nprint(len(b), hashlib.sha256(b).hexdigest()[:12])", "--stdin-file", in)
			if want := "307200 " + sha256Hex([]byte(data))[:12] + "\n"; res.Stdout != want {
				t.Fatalf("stdin read whole: %+v %s, want %q", res, r.stderr, want)
			}
			if res, _ := sessionCall(t, id, "print('unread')", "--stdin-file", in); res.Stdout != "unread\n" || res.ExitCode != 0 {
				t.Fatalf("stdin unread: %+v", res)
			}
			// A frame forged for a later call is dropped; the call's own
			// output is whole.
			res, _ = sessionCall(t, id, wireOf+"os.write(w.out, b'out 99 6\\nforged')\nw.send(b'out', 98, b'forged')\nprint('mine')")
			if res.Stdout != "mine\n" || res.ExitCode != 0 || res.SessionEnded != "" {
				t.Fatalf("forged frames: %+v", res)
			}
			if res, _ := sessionCall(t, id, "print(len('x' * 10))"); res.Stdout != "10\n" {
				t.Fatalf("after forged frames: %+v", res)
			}
			boxer(t, nil, "session", "rm", id)
			assertClean(t)

			// What is not a frame ends the session, and says why.
			for name, junk := range map[string]string{
				"not a frame": `b"not a frame at all\n"`,
				"huge length": `b"out 1 99999999999\n"`,
				"no newline":  `b"x" * 70000`,
			} {
				id := createSession(t, "--lang", "python", "--runtime", rt)
				res, _ := sessionCall(t, id, wireOf+"os.write(w.out, "+junk+")\nimport time; time.sleep(1)")
				if res.Status != "error" || res.SessionEnded != "interpreter_wire_broken" {
					t.Errorf("%s: %+v", name, res)
				}
				if _, r := sessionCall(t, id, "print(1)"); r.code != 125 || !strings.Contains(r.stderr, "session "+id+" has ended (") {
					t.Errorf("%s: after: %d %q", name, r.code, r.stderr)
				}
				assertClean(t)
			}

			// An interpreter killed by its call ends the session at once.
			id = createSession(t, "--lang", "python", "--runtime", rt)
			res, _ = sessionCall(t, id, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
			if res.Status != "error" || res.SessionEnded != "interpreter_exited" {
				t.Errorf("interpreter killed: %+v", res)
			}
			assertClean(t)
			// The driver's own hold on its input's writer closed: the
			// shim's hold on the same FIFO keeps the session going.
			id = createSession(t, "--lang", "python", "--runtime", rt)
			sessionCall(t, id, wireOf+"os.close(w.keep)\nx = 3")
			for i := range 2 {
				if res, r := sessionCall(t, id, "print(x)"); res.Stdout != "3\n" {
					t.Errorf("wire's keeper closed, call %d: %+v %d %q", i, res, r.code, r.stderr)
				}
			}
			boxer(t, nil, "session", "rm", id)
			assertClean(t)
		})
	}
}

// TestSessionOtherNamespace: a detached session of one containerd
// namespace outlives the reaping of a boxer command in another (run
// directories are shared by namespaces, not their containers).
func TestSessionOtherNamespace(t *testing.T) {
	other := namespace + "-other"
	r := boxer(t, nil, "--namespace", other, "setup", "--lang", "python")
	if r.code != 0 {
		t.Fatalf("setup in %s: %s", other, r.stderr)
	}
	r = boxer(t, nil, "--namespace", other, "session", "create", "--lang", "python")
	if r.code != 0 {
		t.Fatalf("session create in %s: %s", other, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { boxer(t, nil, "--namespace", other, "session", "rm", id) })
	boxer(t, nil, "--namespace", other, "session", "run", id, "-c", "x = 7")
	// A run in the test's namespace reaps what it finds dead.
	if r := boxer(t, nil, "run", "--lang", "python", "-c", "print(1)"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	r = boxer(t, nil, "--namespace", other, "session", "run", id, "-c", "print(x)")
	if r.code != 0 || r.stdout != "7\n" {
		t.Errorf("session in %s after a run in %s: %d %q %q", other, namespace, r.code, r.stdout, r.stderr)
	}
	if r := boxer(t, nil, "--namespace", other, "session", "rm", id); r.code != 0 {
		t.Errorf("rm: %s", r.stderr)
	}
	if r := boxer(t, nil, "--namespace", other, "image", "rm", "boxer/python"); r.code != 0 {
		t.Errorf("image rm in %s: %s", other, r.stderr)
	}
	assertClean(t)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
