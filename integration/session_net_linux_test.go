package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/internal/fakenet"
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
// report counts all of it, and its figures its bytes; rm leaves no link,
// table, lease or keeper. On runc and runsc.
func TestSessionNetwork(t *testing.T) {
	n := internet(t)
	dir, env := caDir(t, n)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			id := netSession(t, n, append([]string{"--lang", "python", "--runtime", rt, "--copy-in", dir, "--timeout", "120s", "--allow-host", "pypi.test"}, env...)...)
			if res, r := sessionCall(t, id, pipInstall); res.Stdout != "installed\n" {
				t.Fatalf("pip install: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			if res, r := sessionCall(t, id, "import boxertest\nprint('imported', boxertest.VALUE)"); res.Stdout != "imported 42\n" {
				t.Errorf("import in a later call: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			if r := sessionExec(t, "", id, "--", "python3", "-c", "import boxertest; print(boxertest.VALUE)"); r.stdout != "42\n" {
				t.Errorf("import in a new process: %d %q %q", r.code, r.stdout, r.stderr)
			}
			if res, r := sessionCall(t, id, strings.Replace(reach, "%s", "web.test", 1)); !strings.HasPrefix(res.Stdout, "refused") {
				t.Errorf("web.test, off the list: %q %q %s", res.Stdout, res.Stderr, r.stderr)
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
			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Fatalf("rm: %d %s", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionNetworkLeftovers: a session's link, table and lease go when
// it expires (its keeper ends it, no other boxer running), and when its
// maker is killed while making it (the next command reaps them).
func TestSessionNetworkLeftovers(t *testing.T) {
	n := internet(t)
	for _, rt := range runtimes {
		netSession(t, n, "--lang", "bash", "--runtime", rt, "--allow-host", "web.test", "--idle-timeout", "2s")
		time.Sleep(4 * time.Second)
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
