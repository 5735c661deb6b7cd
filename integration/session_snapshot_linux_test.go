package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// TestSessionSnapshot checkpoints a python-data session on gVisor with
// pandas imported and a DataFrame defined: its sandbox ends (no process of
// it is left), it resumes from disk with its variables and files, and it
// forks into three sessions that have them too and share no write.
// Another caller sees none of it; what cannot be checkpointed gets 409.
func TestSessionSnapshot(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
	must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
	s := startServer(t, "--token-file", tokens, "--max-sessions-per-caller", "16", "--secret", "TOKEN=file:"+secretFile(t, secretValue(t)))
	create := func(body string) string {
		t.Helper()
		code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", body)
		var sess runner.Session
		if code != 201 || json.Unmarshal(data, &sess) != nil {
			t.Fatalf("create %s: %d %s", body, code, data)
		}
		return sess.ID
	}
	call := func(id, code string) string {
		t.Helper()
		status, data := sessionHTTP(t, s, a, "POST", "/v1/sessions/"+id+"/runs", fmt.Sprintf(`{"code":%q}`, code))
		var res runner.Result
		if status != 200 || json.Unmarshal(data, &res) != nil || res.ExitCode != 0 {
			t.Fatalf("call in %s: %d %s", id, status, data)
		}
		return strings.TrimSpace(res.Stdout)
	}
	id := create(`{"lang":"python-data","runtime":"runsc"}`)
	path := "/v1/sessions/" + id
	call(id, "import pandas as pd\ndf = pd.DataFrame({'a': range(1000)})\nx = 'before'\nopen('/workspace/mark', 'w').write('src')\nopen('/tmp/mark', 'w').write('src')")
	state := "print(df.shape, int(df.a.sum()), x, open('/workspace/mark').read(), open('/tmp/mark').read())"
	if got := call(id, state); got != "(1000, 1) 499500 before src src" {
		t.Fatalf("before the checkpoint: %q", got)
	}

	for _, c := range []struct{ path, body string }{{path + "/checkpoint", ""}, {path + "/fork", `{"count":1}`}} {
		if code, data := sessionHTTP(t, s, b, "POST", c.path, c.body); code != 404 {
			t.Errorf("token b POST %s: %d %s", c.path, code, data)
		}
	}
	code, data := sessionHTTP(t, s, a, "POST", path+"/checkpoint", "")
	var sess runner.Session
	if code != 200 || json.Unmarshal(data, &sess) != nil || !sess.Checkpointed || !sess.Paused {
		t.Fatalf("checkpoint: %d %s", code, data)
	}
	if procs := processLines(func(cmd string) bool { return strings.Contains(cmd, id) }); len(procs) > 0 {
		t.Errorf("processes of the checkpointed session's sandbox left: %v", procs)
	}
	image := filepath.Join(rootDir, "checkpoints", namespace, id)
	if st, err := os.Stat(image); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("its checkpoint on disk: %v, %v; want a directory of root's alone", st, err)
	}
	if code, data := sessionHTTP(t, s, a, "POST", path+"/runs", `{"code":"print(1)"}`); code != 409 {
		t.Errorf("a call while checkpointed: %d %s, want 409", code, data)
	}
	if _, data := sessionHTTP(t, s, a, "GET", "/v1/sessions", ""); !strings.Contains(string(data), `"checkpointed":true`) {
		t.Errorf("list while checkpointed: %s", data)
	}
	if code, data := sessionHTTP(t, s, a, "GET", path+"/stats", ""); code != 200 || !strings.Contains(string(data), `"checkpointed":true`) {
		t.Errorf("stats while checkpointed: %d %s", code, data)
	}
	if code, data := sessionHTTP(t, s, a, "POST", path+"/resume", ""); code != 200 || !strings.Contains(string(data), `"checkpointed":false`) {
		t.Fatalf("resume from disk: %d %s", code, data)
	}
	if got := call(id, state); got != "(1000, 1) 499500 before src src" {
		t.Errorf("after the resume from disk: %q", got)
	}
	if _, err := os.Stat(image); !os.IsNotExist(err) {
		t.Errorf("its checkpoint after the resume: %v, want it removed", err)
	}

	// Hostile files for the copy: links out of the sandbox (absolute and
	// by ..) to a file of the host's, and a FIFO, which a copy that opened
	// it would hang on (gVisor keeps it in its own kernel, in the image).
	host := filepath.Join(t.TempDir(), "host-secret")
	must(t, os.WriteFile(host, []byte("host's"), 0o644))
	up := "../../../../../../../.." + host
	call(id, fmt.Sprintf("import os\nos.symlink(%q, '/workspace/esc')\nos.symlink(%q, '/home/user/esc2')\nos.mkfifo('/tmp/fifo')", host, up))

	// Three forks of the running session, each then written to.
	code, data = sessionHTTP(t, s, a, "POST", path+"/fork", `{"count":3}`)
	var forked struct{ Sessions []runner.Session }
	if code != 201 || json.Unmarshal(data, &forked) != nil || len(forked.Sessions) != 3 {
		t.Fatalf("fork 3: %d %s", code, data)
	}
	files := filepath.Join(stateDir, "runs", forked.Sessions[0].ID, "files")
	for _, l := range []struct{ name, target string }{{"workspace/esc", host}, {"home/user/esc2", up}} {
		if target, err := os.Readlink(filepath.Join(files, l.name)); err != nil || target != l.target {
			t.Errorf("the fork's %s: %q, %v; want the link itself, to %s", l.name, target, err, l.target)
		}
	}
	_ = filepath.WalkDir(files, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), "host's") {
				t.Errorf("the host file's bytes in the fork's %s", p)
			}
		}
		return nil
	})
	if got := call(forked.Sessions[0].ID, "import os\nprint(os.path.exists('/workspace/esc'), os.path.exists('/home/user/esc2'))"); got != "False False" {
		t.Errorf("in the fork, the links resolve in its own root: %q", got)
	}
	for i, f := range forked.Sessions {
		if got := call(f.ID, state); got != "(1000, 1) 499500 before src src" {
			t.Errorf("fork %d before its writes: %q", i, got)
		}
		call(f.ID, fmt.Sprintf("df['b'] = %d\nx = 'f%d'\nopen('/workspace/mark', 'w').write(x)\nopen('/tmp/mark', 'w').write(x)", i, i))
	}
	for i, f := range forked.Sessions {
		want := fmt.Sprintf("(1000, 2) 499500 f%d f%d f%d", i, i, i)
		if got := call(f.ID, state); got != want {
			t.Errorf("fork %d after the writes: %q, want %q", i, got, want)
		}
	}
	if got := call(id, state); got != "(1000, 1) 499500 before src src" {
		t.Errorf("the session after its forks' writes: %q", got)
	}
	if code, data := sessionHTTP(t, s, b, "GET", "/v1/sessions", ""); code != 200 || strings.Contains(string(data), "bxs-") {
		t.Errorf("token b's list: %d %s", code, data)
	}

	// A paused session forks (it stays paused) and is checkpointed; a
	// checkpointed one forks too, and stays checkpointed.
	if code, data := sessionHTTP(t, s, a, "POST", path+"/pause", ""); code != 200 {
		t.Fatalf("pause: %d %s", code, data)
	}
	code, data = sessionHTTP(t, s, a, "POST", path+"/fork", "")
	if code != 201 || json.Unmarshal(data, &forked) != nil || len(forked.Sessions) != 1 {
		t.Fatalf("fork of the paused session: %d %s", code, data)
	}
	if got := call(forked.Sessions[0].ID, state); got != "(1000, 1) 499500 before src src" {
		t.Errorf("fork of the paused session: %q", got)
	}
	code, data = sessionHTTP(t, s, a, "POST", path+"/checkpoint", "")
	if code != 200 || json.Unmarshal(data, &sess) != nil || !sess.Checkpointed || !sess.Paused {
		t.Fatalf("checkpoint of the paused session: %d %s", code, data)
	}
	if procs := processLines(func(cmd string) bool { return strings.Contains(cmd, id) }); len(procs) > 0 {
		t.Errorf("processes of the paused, checkpointed session's sandbox left: %v", procs)
	}
	code, data = sessionHTTP(t, s, a, "POST", path+"/fork", "")
	if code != 201 || json.Unmarshal(data, &forked) != nil || len(forked.Sessions) != 1 {
		t.Fatalf("fork of the checkpointed session: %d %s", code, data)
	}
	if got := call(forked.Sessions[0].ID, state); got != "(1000, 1) 499500 before src src" {
		t.Errorf("fork of the checkpointed session: %q", got)
	}
	if code, _, data := sessionDo(t, s, invalidRequest(sessionRequest(a, "POST", s.url+path+"/fork", `{"count":9}`))); code != 400 || !strings.Contains(string(data), `"field":"count"`) {
		t.Errorf("fork 9: %d %s, want 400 naming count", code, data)
	}

	// What cannot be checkpointed says why.
	runc := create(`{"lang":"python","runtime":"runc"}`)
	busy := create(`{"lang":"python","runtime":"runsc"}`)
	secret := create(`{"lang":"python","runtime":"runsc","secrets":["TOKEN"]}`)
	if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions/"+busy+"/processes", `{"args":["sleep","600"]}`); code != 201 {
		t.Fatalf("background process: %d %s", code, data)
	}
	for _, c := range []struct{ id, why string }{{runc, "CRIU"}, {secret, "secrets"}} {
		if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions/"+c.id+"/checkpoint", ""); code != 409 || !strings.Contains(string(data), c.why) {
			t.Errorf("checkpoint of %s: %d %s, want 409 saying %q", c.id, code, data, c.why)
		}
	}
	// A python session's processes are its process server's children,
	// as its interpreter is: a checkpoint keeps them.
	if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions/"+busy+"/checkpoint", ""); code != 200 {
		t.Errorf("checkpoint with a process running: %d %s", code, data)
	}
	if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions/"+busy+"/resume", ""); code != 200 {
		t.Errorf("resume with a process running: %d %s", code, data)
	}
	if code, data := sessionHTTP(t, s, a, "GET", "/v1/sessions/"+busy+"/processes", ""); code != 200 || !strings.Contains(string(data), `"running":true`) {
		t.Errorf("the process after a resume: %d %s", code, data)
	}

	// Everything goes with the sessions: their checkpoints too.
	code, data = sessionHTTP(t, s, a, "GET", "/v1/sessions", "")
	var list struct{ Sessions []runner.Session }
	if code != 200 || json.Unmarshal(data, &list) != nil {
		t.Fatalf("list: %d %s", code, data)
	}
	for _, sess := range list.Sessions {
		if code, data := sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+sess.ID, ""); code != 204 && code != 200 {
			t.Errorf("delete %s: %d %s", sess.ID, code, data)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(rootDir, "checkpoints", namespace)); len(entries) > 0 {
		t.Errorf("checkpoints left: %v", entries)
	}
	if procs := processLines(func(cmd string) bool { return strings.Contains(cmd, id) }); len(procs) > 0 {
		t.Errorf("processes left: %v", procs)
	}
}

// TestSessionSnapshotCLI: the CLI checkpoints a gVisor session, lists it
// as checkpointed, forks it and resumes it; the forks live on their own
// (their keeper ends them), and a runc session is refused with exit 125.
func TestSessionSnapshotCLI(t *testing.T) {
	id := createSession(t, "--runtime", "runsc", "--lang", "python")
	if res, r := sessionCall(t, id, "x = 41"); r.code != 0 {
		t.Fatalf("session run: %+v %s", res, r.stderr)
	}
	if r := boxer(t, nil, "session", "checkpoint", id); r.code != 0 {
		t.Fatalf("checkpoint: %d %s", r.code, r.stderr)
	}
	if r := boxer(t, nil, "session", "ls"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "checkpointed") {
		t.Errorf("ls: %s", r.stdout)
	}
	if r := boxer(t, nil, "session", "run", id, "-c", "print(x)"); r.code != 125 || !strings.Contains(r.stderr, "resume") {
		t.Errorf("a call while checkpointed: %d %s, want 125 saying to resume", r.code, r.stderr)
	}
	r := boxer(t, nil, "session", "fork", id, "-n", "2")
	forks := strings.Fields(r.stdout)
	if r.code != 0 || len(forks) != 2 {
		t.Fatalf("fork -n 2: %d %q %s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { boxer(t, nil, append([]string{"session", "rm"}, forks...)...) })
	if r := boxer(t, nil, "session", "resume", id); r.code != 0 {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
	for _, s := range append(forks, id) {
		if res, r := sessionCall(t, s, "x += 1; print(x)"); r.code != 0 || res.Stdout != "42\n" {
			t.Errorf("in %s: %+v %s", s, res, r.stderr)
		}
	}
	runc := createSession(t, "--runtime", "runc", "--lang", "python")
	if r := boxer(t, nil, "session", "checkpoint", runc); r.code != 125 || !strings.Contains(r.stderr, "CRIU") {
		t.Errorf("checkpoint on runc: %d %s, want 125 naming CRIU", r.code, r.stderr)
	}
	if r := boxer(t, nil, "session", "fork", id, "-n", "0"); r.code != 125 || !strings.Contains(r.stderr, "--count") {
		t.Errorf("fork -n 0: %d %s, want 125 naming --count", r.code, r.stderr)
	}
	if r := boxer(t, nil, append([]string{"session", "rm", id, runc}, forks...)...); r.code != 0 {
		t.Errorf("rm: %d %s", r.code, r.stderr)
	}
	assertClean(t)
}
