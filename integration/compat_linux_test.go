package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/daemon"
)

// compatContainerd is Debian 12's containerd 1.6, unpacked by 'make test-deps'.
const compatContainerd = "/usr/local/lib/boxer/compat/usr/bin/containerd"

// TestContainerd16Daemon proves boxer's containerd 2.x client against
// Debian's containerd 1.6 daemon, which a host may run as its system
// containerd: image import, a hardened run, and full cleanup.
func TestContainerd16Daemon(t *testing.T) {
	out, err := exec.Command(compatContainerd, "--version").Output()
	if err != nil {
		t.Fatalf("%s: %v: run 'make test-deps'", compatContainerd, err)
	}
	if !strings.Contains(string(out), " 1.6.") {
		t.Fatalf("want containerd 1.6, got %s", out)
	}
	base, err := os.MkdirTemp("", "bx16-")
	if err != nil {
		t.Fatal(err)
	}
	// As /run is (see TestMain).
	must(t, os.Chmod(base, 0o711))
	env := append(boxerEnv(filepath.Join(base, "r"), filepath.Join(base, "s")), "BOXER_CONTAINERD="+compatContainerd)
	t.Cleanup(func() {
		stopDaemon(env)
		os.RemoveAll(base)
	})
	setup := exec.Command(boxerBin, "setup")
	setup.Env = env
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("setup on containerd 1.6: %v: %s", err, out)
	}
	cmd := exec.Command(boxerBin, "run", "--json", "--lang", "python", "-c", `print(sorted({l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")}), open("/proc/self/status").read().count("Seccomp:\t2"))`)
	cmd.Env = env
	// Debian's 1.6 shim finds runc on the PATH boxer gives the daemon: the
	// pinned one, not Debian's (the containerd package's runc dependency is
	// not installed by unpacking it).
	seen := execsDuring(base, []string{"runc"}, func() { out, err = cmd.Output() })
	if err != nil {
		t.Fatalf("run on containerd 1.6: %v: %s", err, out)
	}
	assertOnly(t, "containerd 1.6's runc shim", seen, filepath.Join(daemon.LibexecDir, "runc"))
	var res result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "exited" || res.Stdout != "['0000000000000000'] 1\n" || res.MemoryPeakBytes == 0 {
		t.Errorf("result %+v", res)
	}
	status := exec.Command(boxerBin, "containerd", "status")
	status.Env = env
	if out, _ := status.Output(); !strings.HasPrefix(string(out), "running") {
		t.Errorf("status: %s", out)
	}
	ls := exec.Command(compatContainerd[:len(compatContainerd)-len("containerd")]+"ctr", "-a", filepath.Join(base, "s", "containerd.sock"), "-n", "boxer", "containers", "ls", "-q")
	if out, err := ls.Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("containers left on containerd 1.6: %q %v", out, err)
	}
	for _, p := range processesMatching(base) {
		t.Errorf("process left behind: %s", p)
	}
}
