package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/internal/fakenet"
	"github.com/boxer-dev/boxer/internal/leftover"
)

// netSession makes a session against the fake internet; rm at the end.
func netSession(t *testing.T, n *fakenet.Net, flags ...string) string {
	t.Helper()
	r := boxer(t, egressEnv(n), append([]string{"session", "create"}, flags...)...)
	if r.code != 0 {
		t.Fatalf("session create %v: %d %s", flags, r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { boxer(t, nil, "session", "rm", id) })
	return id
}

// sessionNetwork is 'boxer session network ID --json'.
func sessionNetwork(t *testing.T, id string) egress.Report {
	t.Helper()
	r := boxer(t, nil, "session", "network", id, "--json")
	var rep egress.Report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		t.Fatalf("session network: %d %q %q", r.code, r.stdout, r.stderr)
	}
	return rep
}

const (
	// pipInstall installs boxertest from the fake index.
	pipInstall = `
import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--index-url", "https://pypi.test/simple", "boxertest"], capture_output=True, text=True)
print("installed" if p.returncode == 0 else "pip failed " + p.stdout + p.stderr)
`
	// reach tries https://HOST/ and says whether it was refused.
	reach = `
import sys, urllib.request
try:
    urllib.request.urlopen("https://%s/", timeout=10).read()
    print("reached")
except Exception as e:
    print("refused", type(e).__name__)
`
)

// denied says whether the report refused dest.
func denied(rep egress.Report, dest string) bool {
	return slices.ContainsFunc(rep.Denied, func(d egress.Denial) bool { return strings.HasPrefix(d.Destination, dest) })
}

// TestSessionNetwork: a session made with --allow-host pip-installs a
// package from the fake index in one call and imports it in a later one
// (the same interpreter, and a new process); a background process
// reaches the allowed host, a call is refused another; the session's
// report counts all of it, and its figures its bytes; 'session allow'
// changes the list of the live session; a keeper killed is replaced by
// one that serves the gateway again; rm leaves no link, table, lease or
// keeper. On runc and runsc.
func TestSessionNetwork(t *testing.T) {
	n := internet(t)
	dir, env := caDir(t, n)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			id := netSession(t, n, append([]string{"--lang", "python", "--runtime", rt, "--copy-in", dir, "--timeout", "120s", "--allow-host", "pypi.test"}, env...)...)
			res, r := sessionCall(t, id, pipInstall)
			if res.Stdout != "installed\n" {
				t.Fatalf("pip install: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			// The call's own report: what the session's network did
			// during it.
			if n := res.Network; n == nil || n.Connections < 1 || n.BytesIn == 0 || n.DeniedTotal != 0 {
				t.Errorf("pip install's network: %+v", n)
			}
			if res, r := sessionCall(t, id, "import boxertest\nprint('imported', boxertest.VALUE)"); res.Stdout != "imported 42\n" {
				t.Errorf("import in a later call: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			if r := sessionExec(t, "", id, "--", "python3", "-c", "import boxertest; print(boxertest.VALUE)"); r.stdout != "42\n" {
				t.Errorf("import in a new process: %d %q %q", r.code, r.stdout, r.stderr)
			}
			res, r = sessionCall(t, id, strings.Replace(reach, "%s", "web.test", 1))
			if !strings.HasPrefix(res.Stdout, "refused") {
				t.Errorf("web.test, off the list: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			if n := res.Network; n == nil || n.Connections != 0 || n.DeniedTotal != 1 || !denied(*n, "web.test") {
				t.Errorf("the refused call's network: %+v", n)
			}
			if r := sessionExec(t, "", id, "--bg", "--tag", "fetch", "--", "python3", "-c", strings.Replace(reach, "%s", "pypi.test/simple", 1)); r.code != 0 {
				t.Fatalf("background fetch: %d %s", r.code, r.stderr)
			}
			waitOutput(t, id, "fetch", "reached")
			rep := sessionNetwork(t, id)
			if !slices.Equal(rep.Allowed, []string{"pypi.test"}) || rep.Connections < 2 || rep.BytesIn == 0 || !denied(rep, "web.test") {
				t.Errorf("report: %+v", rep)
			}
			if st := sessionStats(t, id); st.Network == nil || st.Network.ReceivedBytes != uint64(rep.BytesIn) {
				t.Errorf("stats' network: %+v, report %+v", st.Network, rep)
			}
			// The list changes while the session runs: web.test now,
			// pypi.test no longer.
			if r := boxer(t, nil, "session", "allow", id, "web.test"); r.code != 0 || r.stdout != "web.test\n" {
				t.Fatalf("allow: %d %q %s", r.code, r.stdout, r.stderr)
			}
			if res, r := sessionCall(t, id, strings.Replace(reach, "%s", "web.test", 1)); res.Stdout != "reached\n" {
				t.Errorf("web.test, allowed now: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			if res, r := sessionCall(t, id, strings.Replace(reach, "%s", "pypi.test/simple", 1)); !strings.HasPrefix(res.Stdout, "refused") {
				t.Errorf("pypi.test, off the list now: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			// A keeper killed: the next command that needs it starts
			// another, which serves the gateway again under the list now.
			pid := keeperOf(t, id)
			must(t, syscall.Kill(pid, syscall.SIGKILL))
			for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if rep := sessionNetwork(t, id); !slices.Equal(rep.Allowed, []string{"web.test"}) {
				t.Errorf("report from a new keeper: %+v", rep)
			}
			if res, r := sessionCall(t, id, strings.Replace(reach, "%s", "web.test", 1)); res.Stdout != "reached\n" {
				t.Errorf("web.test through a new keeper: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Fatalf("rm: %d %s", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
}

// keeperOf is the PID of session id's keeper.
func keeperOf(t *testing.T, id string) int {
	t.Helper()
	// A command that finds no keeper answering starts one, and the two
	// race for the session's lock: the loser exits. On a loaded host the
	// one started with the session may still be starting, and lose: wait
	// for one keeper alone (once, beside two other make tests, the test
	// took the loser's PID and found it gone).
	var pids []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids = pids[:0]
		for _, pid := range leftover.Keepers(boxerBin) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if strings.Contains(string(cmdline), id) {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 1 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s has %d keepers after 10 s (%v), want one", id, len(pids), pids)
		}
	}
}

// TestSessionNetworkLeftovers: a session's link, table and lease go when
// it expires (at its lifetime its keeper ends it, no other boxer running;
// idle, the next command), and when its maker is killed while making it
// (the next command reaps them).
func TestSessionNetworkLeftovers(t *testing.T) {
	n := internet(t)
	for _, rt := range runtimes {
		// Its keeper ends it at its lifetime, with no boxer command run.
		id := netSession(t, n, "--lang", "bash", "--runtime", rt, "--allow-host", "web.test", "--lifetime", "3s")
		for deadline := time.Now().Add(8 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, err := client.LoadContainer(context.Background(), id); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: session %s still there 8s after its 3s lifetime", rt, id)
			}
		}
		assertClean(t)
		// Idle: the next command ends it.
		id = netSession(t, n, "--lang", "bash", "--runtime", rt, "--allow-host", "web.test", "--idle-timeout", "2s")
		time.Sleep(3 * time.Second)
		if r := boxer(t, nil, "session", "ls"); strings.Contains(r.stdout, id) {
			t.Errorf("%s: ls lists an idle session: %s", rt, r.stdout)
		}
		assertClean(t)
	}
	before := netLeases()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "session", "create", "--allow-host", "web.test", "--lang", "python")
	cmd.Env = append(append([]string{}, testEnv...), egressEnv(n)...)
	must(t, cmd.Start())
	// Killed once its link is made, before its sandbox runs.
	for deadline := time.Now().Add(15 * time.Second); ; {
		if leased(before) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's link was never made")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if r := boxer(t, nil, "run", "--lang", "python", "-c", "print('next')"); r.stdout != "next\n" {
		t.Errorf("next run: %q %q", r.stdout, r.stderr)
	}
	assertClean(t)
}

// netLeases are the holders of the address leases of this test run's
// sandboxes.
func netLeases() map[string]bool {
	held := map[string]bool{}
	entries, _ := os.ReadDir(egress.LeaseDir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(egress.LeaseDir, e.Name()))
		if err == nil && strings.HasPrefix(string(data), stateDir) {
			held[string(data)] = true
		}
	}
	return held
}

// leased says whether a sandbox holds a lease it did not hold before.
func leased(before map[string]bool) bool {
	for h := range netLeases() {
		if !before[h] {
			return true
		}
	}
	return false
}

// allowHTTP is PUT /v1/sessions/{id}/network/allow with a JSON body.
func allowHTTP(t *testing.T, s *server, token, id, body string) (int, []byte) {
	t.Helper()
	req := sessionRequest(token, "PUT", s.url+"/v1/sessions/"+id+"/network/allow", body)
	req.Header.Set("Content-Type", "application/json")
	code, _, data := sessionDo(t, s, req)
	return code, data
}

// TestSessionNetworkHTTP: over HTTP a session's allow_hosts lies within
// the operator's list (403 naming allow_hosts beyond it, at creation and
// when changed), its report is the caller's alone (another token's 404),
// a session made without network has none to report or change (409), and
// a list changed while it runs holds from the next connection. On runc
// and runsc.
func TestSessionNetworkHTTP(t *testing.T) {
	internet(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
	must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
	s := startServer(t, "--token-file", tokens, "--allow-host", "web.test:443,7000")
	code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"python","allow_hosts":["other.test"]}`)
	if code != 403 || !strings.Contains(string(data), `"field":"allow_hosts"`) {
		t.Errorf("outside the operator's list: %d %s, want 403 naming allow_hosts", code, data)
	}
	echo := `import socket\ntry:\n    s = socket.create_connection((\"web.test\", 7000), timeout=5); s.sendall(b\"hi\"); print(s.makefile(\"rb\").read(2).decode())\nexcept OSError as e:\n    print(\"refused\", type(e).__name__)`
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`","allow_hosts":["web.test:7000"],"net_bytes":"1m"}`)
			var sess struct{ ID string }
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"`+echo+`"}`)
			if code != 200 || !strings.Contains(string(data), `"stdout":"hi\n"`) {
				t.Errorf("echo: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "GET", "/v1/sessions/"+sess.ID+"/network", "")
			var rep egress.Report
			if code != 200 || json.Unmarshal(data, &rep) != nil || rep.Connections != 1 || !slices.Equal(rep.Allowed, []string{"web.test:7000"}) {
				t.Errorf("network: %d %s", code, data)
			}
			if code, data = sessionHTTP(t, s, b, "GET", "/v1/sessions/"+sess.ID+"/network", ""); code != 404 {
				t.Errorf("another token's network: %d %s", code, data)
			}
			if code, data = allowHTTP(t, s, b, sess.ID, `{"allow_hosts":["web.test"]}`); code != 404 {
				t.Errorf("another token's allow: %d %s", code, data)
			}
			code, data = allowHTTP(t, s, a, sess.ID, `{"allow_hosts":["other.test"]}`)
			if code != 403 || !strings.Contains(string(data), `"field":"allow_hosts"`) {
				t.Errorf("allow beyond the operator's list: %d %s", code, data)
			}
			code, data = allowHTTP(t, s, a, sess.ID, `{"allow_hosts":["web.test"]}`)
			if code != 200 || json.Unmarshal(data, &rep) != nil || !slices.Equal(rep.Allowed, []string{"web.test"}) {
				t.Errorf("allow: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"`+echo+`"}`)
			if code != 200 || !strings.Contains(string(data), `"stdout":"refused`) {
				t.Errorf("echo after its port left the list: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`"}`)
			var plain struct{ ID string }
			if code != 201 || json.Unmarshal(data, &plain) != nil {
				t.Fatalf("create without network: %d %s", code, data)
			}
			if code, data = sessionHTTP(t, s, a, "GET", "/v1/sessions/"+plain.ID+"/network", ""); code != 409 {
				t.Errorf("network of a session without: %d %s", code, data)
			}
			for _, id := range []string{sess.ID, plain.ID} {
				if code, data := sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+id, ""); code != 204 {
					t.Errorf("delete: %d %s", code, data)
				}
			}
		})
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
	assertClean(t)
}
