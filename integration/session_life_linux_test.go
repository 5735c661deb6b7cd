package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
	containerd "github.com/containerd/containerd/v2/client"
)

// counterCode starts, in a python session's interpreter, a thread that
// counts every 50 ms and writes the count to /workspace/n: its state is
// the interpreter's, its pace the sandbox's clock as it runs.
const counterCode = `import threading, time
n = 0
def count():
    global n
    while True:
        n += 1
        with open('/workspace/n.tmp', 'w') as f:
            f.write(str(n))
        import os; os.replace('/workspace/n.tmp', '/workspace/n')
        time.sleep(0.05)
threading.Thread(target=count, daemon=True).start()
time.sleep(0.3)
print(n)`

// sessionStats reads a session's figures through the CLI.
func sessionStats(t *testing.T, id string) runner.SessionStats {
	t.Helper()
	r := boxer(t, nil, "session", "stats", id, "--json")
	var st runner.SessionStats
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		t.Fatalf("session stats %s: %d %q %q", id, r.code, r.stdout, r.stderr)
	}
	return st
}

// workspaceCount reads the counter the sandbox writes, from the host.
func workspaceCount(t *testing.T, id string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateDir, "runs", id, "files", "workspace", "n"))
	if err != nil {
		t.Fatalf("reading the counter from the host: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("the counter: %q", data)
	}
	return n
}

// TestSessionPause: while a session is paused, a counting thread in its
// interpreter does not advance and its cgroup uses no CPU (gVisor's own
// kernel, a little: under 1% of a core); calls and file
// copies are refused, saying how to resume; after the resume the thread
// goes on from where it was, with its interpreter's state. A paused session
// is listed as paused and can be removed. On runc and runsc.
func TestSessionPause(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "python", "--runtime", rt)
			res, r := sessionCall(t, id, counterCode)
			if res.ExitCode != 0 {
				t.Fatalf("starting the counter: %+v %s", res, r.stderr)
			}
			if r := boxer(t, nil, "session", "pause", id); r.code != 0 {
				t.Fatalf("pause: %d %s", r.code, r.stderr)
			}
			before, cpu := workspaceCount(t, id), sessionStats(t, id)
			if !cpu.Paused || cpu.CPUTimeMs <= 0 || cpu.MemoryBytes == 0 || cpu.DiskUsedBytes == 0 || cpu.Network != nil {
				t.Errorf("stats while paused: %+v", cpu)
			}
			time.Sleep(1500 * time.Millisecond)
			after, cpu2 := workspaceCount(t, id), sessionStats(t, id)
			t.Logf("paused 1.5s: counter %d -> %d, cpu %.1f -> %.1f ms", before, after, cpu.CPUTimeMs, cpu2.CPUTimeMs)
			if after != before {
				t.Errorf("the counter went on while paused: %d -> %d", before, after)
			}
			// runc freezes every process of the sandbox; gVisor stops the
			// program's tasks, and its own kernel keeps a little time
			// (seen: 1.6 ms a second).
			if used, most := cpu2.CPUTimeMs-cpu.CPUTimeMs, map[string]float64{"runc": 0.5, "runsc": 15}[rt]; used > most {
				t.Errorf("the session used %.1f ms of CPU while paused 1.5s, more than %.1f", used, most)
			}
			// Refused, not left waiting on a frozen sandbox.
			start := time.Now()
			_, r = sessionCall(t, id, "print(n)")
			if r.code != 125 || !strings.Contains(r.stderr, "is paused") || !strings.Contains(r.stderr, "boxer session resume "+id) || time.Since(start) > 5*time.Second {
				t.Errorf("a call while paused: %d %q after %s", r.code, r.stderr, time.Since(start))
			}
			if r := boxer(t, nil, "session", "cp", id+":n", filepath.Join(t.TempDir(), "n")); r.code != 125 || !strings.Contains(r.stderr, "is paused") {
				t.Errorf("cp while paused: %d %q", r.code, r.stderr)
			}
			var list []runner.Session
			if r := boxer(t, nil, "session", "ls", "--json"); json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 1 || !list[0].Paused || list[0].PausedAt == nil {
				t.Errorf("ls while paused: %s", r.stdout)
			}
			if r := boxer(t, nil, "session", "ls"); !strings.Contains(r.stdout, "paused") {
				t.Errorf("ls while paused: %s", r.stdout)
			}
			if r := boxer(t, nil, "session", "resume", id); r.code != 0 {
				t.Fatalf("resume: %d %s", r.code, r.stderr)
			}
			res, r = sessionCall(t, id, "time.sleep(0.5); print(n)")
			n, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
			if res.ExitCode != 0 || n <= after || n > after+40 {
				t.Errorf("after the resume: %+v %s, want the count on from %d", res, r.stderr, after)
			}
			if st := sessionStats(t, id); st.Paused || st.CPUTimeMs <= cpu2.CPUTimeMs {
				t.Errorf("stats after the resume: %+v", st)
			}
			// A paused session is removed like any other.
			if r := boxer(t, nil, "session", "pause", id); r.code != 0 {
				t.Fatalf("pause: %d %s", r.code, r.stderr)
			}
			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Errorf("rm while paused: %d %s", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionPauseIdle: a paused session's idle clock stops (idle 2s,
// paused 4s: it lives); resumed, it is idle again from the resume, and
// ends. Its lifetime runs on while paused: one paused past its deadline
// ends at the next boxer command, frozen as it is.
func TestSessionPauseIdle(t *testing.T) {
	id := createSession(t, "--lang", "bash", "--idle-timeout", "2s")
	if r := boxer(t, nil, "session", "pause", id); r.code != 0 {
		t.Fatalf("pause: %d %s", r.code, r.stderr)
	}
	time.Sleep(4 * time.Second)
	if r := boxer(t, nil, "session", "ls"); !strings.Contains(r.stdout, id) {
		t.Fatalf("a paused session ended idle: %s", r.stdout)
	}
	if r := boxer(t, nil, "session", "resume", id); r.code != 0 {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
	if res, r := sessionCall(t, id, "echo alive"); res.Stdout != "alive\n" {
		t.Fatalf("after the resume: %+v %s", res, r.stderr)
	}
	time.Sleep(3 * time.Second)
	if _, r := sessionCall(t, id, "echo 1"); r.code != 125 || !strings.Contains(r.stderr, "idle too long") {
		t.Errorf("idle after the resume: %d %q", r.code, r.stderr)
	}
	assertClean(t)

	id = createSession(t, "--lang", "bash", "--lifetime", "5s")
	if r := boxer(t, nil, "session", "pause", id); r.code != 0 {
		t.Fatalf("pause: %d %s", r.code, r.stderr)
	}
	time.Sleep(6 * time.Second)
	if r := boxer(t, nil, "session", "ls"); strings.Contains(r.stdout, id) {
		t.Errorf("a paused session lives past its lifetime: %s", r.stdout)
	}
	assertClean(t)
}

// TestSessionTimeout: the time left can be set past the session's
// lifetime (it lives on: its sandbox was made for the maximum) and short
// of it (it ends then), not past the maximum lifetime; a lifetime above
// the maximum is refused, naming lifetime.
func TestSessionTimeout(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "bash", "--runtime", rt, "--lifetime", "5s")
			r := boxer(t, nil, "session", "timeout", id, "30s")
			end, err := time.Parse(time.RFC3339, strings.TrimSpace(r.stdout))
			if r.code != 0 || err != nil || time.Until(end) < 25*time.Second {
				t.Fatalf("timeout 30s: %d %q %q", r.code, r.stdout, r.stderr)
			}
			time.Sleep(6 * time.Second)
			if res, r := sessionCall(t, id, "echo alive"); res.Stdout != "alive\n" {
				t.Fatalf("past its first lifetime: %+v %s", res, r.stderr)
			}
			if r := boxer(t, nil, "session", "timeout", id, "2s"); r.code != 0 {
				t.Fatalf("timeout 2s: %d %s", r.code, r.stderr)
			}
			time.Sleep(3 * time.Second)
			if _, r := sessionCall(t, id, "echo 1"); r.code != 125 || !strings.Contains(r.stderr, "lifetime ran out") {
				t.Errorf("past the time it was given: %d %q", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
	id := createSession(t, "--lang", "bash")
	if r := boxer(t, nil, "session", "timeout", id, "25h"); r.code != 125 || !strings.Contains(r.stderr, "timeout 25h0m0s from now is past the latest") {
		t.Errorf("timeout 25h: %d %q", r.code, r.stderr)
	}
	if r := boxer(t, nil, "session", "create", "--lang", "bash", "--lifetime", "25h"); r.code != 125 || !strings.Contains(r.stderr, "--lifetime") {
		t.Errorf("create --lifetime 25h: %d %q %q", r.code, r.stdout, r.stderr)
	}
	boxer(t, nil, "session", "rm", id)
	assertClean(t)
}

// TestSessionLifeHTTP: pause, resume, timeout and stats over HTTP; a call
// to a paused session is 409, saying how to resume; the figures show the
// CPU of a busy call; a lifetime or a timeout past the server's maximum
// is 400 naming it; a second token gets 404 for each. On runc and runsc.
func TestSessionLifeHTTP(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens, "--max-session-lifetime", "1h")
			if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"python","lifetime":"2h"}`); code != 400 || !strings.Contains(string(data), `"field":"lifetime"`) {
				t.Errorf("lifetime 2h past a maximum of 1h: %d %s", code, data)
			}
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			path := "/v1/sessions/" + sess.ID
			var st0, st1 runner.SessionStats
			code, data = sessionHTTP(t, s, a, "GET", path+"/stats", "")
			if code != 200 || json.Unmarshal(data, &st0) != nil || st0.ID != sess.ID || st0.MemoryLimitBytes <= 0 || st0.DiskLimitBytes == 0 || !strings.Contains(string(data), `"network":null`) {
				t.Fatalf("stats: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", path+"/runs", `{"code":"import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nopen('big', 'wb').write(bytes(1 << 20))"}`); code != 200 {
				t.Fatalf("busy call: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "GET", path+"/stats", "")
			// The 0.3 s are the loop's own clock's. gVisor's (ptrace)
			// counts time the loaded host took from its stub: beside two
			// more make test runs the sandbox's cgroup had 246 ms of it.
			minCPU := 250.0
			if rt == "runsc" {
				minCPU = 150
			}
			if code != 200 || json.Unmarshal(data, &st1) != nil || st1.CPUTimeMs-st0.CPUTimeMs < minCPU || st1.DiskUsedBytes < st0.DiskUsedBytes+1<<20 {
				t.Errorf("stats after a busy call: %d %s (before: %+v)", code, data, st0)
			}
			// The other token: as if the session did not exist.
			for _, c := range []struct{ method, path, body string }{
				{"POST", path + "/pause", ""}, {"POST", path + "/resume", ""}, {"POST", path + "/timeout", `{"timeout":"10m"}`}, {"GET", path + "/stats", ""},
			} {
				if code, data := sessionHTTP(t, s, b, c.method, c.path, c.body); code != 404 {
					t.Errorf("token b %s %s: %d %s", c.method, c.path, code, data)
				}
			}
			code, data = sessionHTTP(t, s, a, "POST", path+"/pause", "")
			var paused runner.Session
			if code != 200 || json.Unmarshal(data, &paused) != nil || !paused.Paused || paused.PausedAt == nil {
				t.Fatalf("pause: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", path+"/runs", `{"code":"print(1)"}`); code != 409 || !strings.Contains(string(data), "is paused") || !strings.Contains(string(data), path+"/resume") {
				t.Errorf("a call while paused: %d %s, want 409 saying how to resume", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "GET", path+"/files/big", ""); code != 409 {
				t.Errorf("a file while paused: %d %s, want 409", code, data)
			}
			if _, data := sessionHTTP(t, s, a, "GET", "/v1/sessions", ""); !strings.Contains(string(data), `"paused":true`) {
				t.Errorf("list while paused: %s", data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", path+"/resume", ""); code != 200 || !strings.Contains(string(data), `"paused":false`) {
				t.Fatalf("resume: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, a, "POST", path+"/runs", `{"code":"print(1)"}`); code != 200 {
				t.Errorf("a call after the resume: %d %s", code, data)
			}
			// Its time left: within the maximum, not past it.
			code, data = sessionHTTP(t, s, a, "POST", path+"/timeout", `{"timeout":"50m"}`)
			var moved runner.Session
			if code != 200 || json.Unmarshal(data, &moved) != nil || time.Until(moved.ExpiresAt) < 49*time.Minute {
				t.Errorf("timeout 50m: %d %s", code, data)
			}
			for _, body := range []string{`{"timeout":"2h"}`, `{"timeout":"0s"}`, `{"timeout":"soon"}`} {
				if code, data := sessionHTTP(t, s, a, "POST", path+"/timeout", body); code != 400 || !strings.Contains(string(data), `"field":"timeout"`) {
					t.Errorf("timeout %s: %d %s, want 400 naming timeout", body, code, data)
				}
			}
			if code, data := sessionHTTP(t, s, a, "DELETE", path, ""); code != 204 {
				t.Errorf("delete: %d %s", code, data)
			}
			s.stop(t)
			assertClean(t)
		})
	}
}

// TestSessionBackstop: a session whose boxer processes are all gone ends
// itself at its backstop, the maximum lifetime it was made under. On runc
// its first program is a sleep for it; on runsc its first program is its
// interpreter, under boxer-init -t, which ends the sandbox then.
func TestSessionBackstop(t *testing.T) {
	s := startServer(t, "--max-session-lifetime", "6s")
	var ids []string
	for _, rt := range runtimes {
		code, data := sessionHTTP(t, s, "", "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`","lifetime":"6s"}`)
		var sess runner.Session
		if code != 201 || json.Unmarshal(data, &sess) != nil {
			t.Fatalf("create on %s: %d %s", rt, code, data)
		}
		ids = append(ids, sess.ID)
	}
	// No boxer process is left to end them on time.
	must(t, s.cmd.Process.Kill())
	_ = s.cmd.Wait()
	ctx := context.Background()
	running := func(id string) bool {
		c, err := client.LoadContainer(ctx, id)
		if err != nil {
			return false
		}
		task, err := c.Task(ctx, nil)
		if err != nil {
			return false
		}
		st, err := task.Status(ctx)
		return err == nil && st.Status == containerd.Running
	}
	for _, id := range ids {
		if !running(id) {
			t.Fatalf("session %s ended before its backstop", id)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		var left []string
		for _, id := range ids {
			if running(id) {
				left = append(left, id)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions still running 30 s after their backstop: %v", left)
		}
	}
	// The next boxer command reaps what is left of them.
	if r := boxer(t, nil, "session", "ls"); r.code != 0 {
		t.Fatalf("session ls: %s", r.stderr)
	}
	assertClean(t)
}
