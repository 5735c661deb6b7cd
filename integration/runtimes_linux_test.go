package integration

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/daemon"
)

// pin returns a version pinned in the Makefile (RUNC_VERSION, GVISOR_VERSION).
func pin(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `\s*:=\s*(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("Makefile pins no %s", name)
	}
	return string(m[1])
}

// execsDuring runs fn while it watches the host's processes, and returns
// the executables (/proc/PID/exe) of those whose argv[0] has one of the
// given base names and whose command line contains dir, with how often each
// was seen. The runc shim passes every runc command its bundle's log file,
// and runsc's sandbox and gofer their bundle, so dir (a daemon's state)
// tells them from other daemons' runtimes.
func execsDuring(dir string, names []string, fn func()) map[string]int {
	seen := map[string]int{}
	counted := map[int]bool{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				pid, err := strconv.Atoi(e.Name())
				if err != nil || counted[pid] {
					continue
				}
				data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if err != nil || !bytes.Contains(data, []byte(dir)) {
					continue
				}
				argv0, _, _ := bytes.Cut(data, []byte{0})
				for _, n := range names {
					if filepath.Base(string(argv0)) != n {
						continue
					}
					if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil {
						seen[exe]++
						counted[pid] = true
					}
				}
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	fn()
	close(done)
	wg.Wait()
	return seen
}

// assertOnly fails unless every executable seen is want, and one was.
func assertOnly(t *testing.T, what string, seen map[string]int, want string) {
	t.Helper()
	if len(seen) == 0 {
		t.Errorf("no %s process seen", what)
	}
	for exe, n := range seen {
		if exe != want {
			t.Errorf("%s ran %s (%d processes), want %s", what, exe, n, want)
		}
	}
}

// TestPinnedRuntimes checks that the runtimes 'make deps' built are the
// Makefile's pins, and that the test's private containerd runs that runc and
// boxer's wrapper that runsc (seen in /proc while sandboxes run).
func TestPinnedRuntimes(t *testing.T) {
	runc, runsc := filepath.Join(daemon.LibexecDir, "runc"), filepath.Join(daemon.LibexecDir, "runsc")
	runcVersion := strings.TrimPrefix(pin(t, "RUNC_VERSION"), "v")
	gvisorVersion := pin(t, "GVISOR_VERSION")
	for bin, want := range map[string]string{runc: "runc version " + runcVersion + "\n", runsc: "runsc version " + gvisorVersion + "\n"} {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Fatalf("%s --version: %q %v, want %q: run 'make deps'", bin, out, err, want)
		}
	}
	out, _ := exec.Command(runc, "--version").Output()
	if !strings.Contains(string(out), "commit: "+pin(t, "RUNC_VERSION")+" (Go module h1:") || !strings.Contains(string(out), "libseccomp: ") {
		t.Errorf("runc --version does not name its module and libseccomp:\n%s", out)
	}

	t.Run("runc", func(t *testing.T) {
		var res result
		seen := execsDuring(stateDir, []string{"runc"}, func() {
			res, _ = python(t, "import time; time.sleep(1); print('ok')")
		})
		if res.Status != "exited" || res.Stdout != "ok\n" {
			t.Fatalf("run: %+v", res)
		}
		assertOnly(t, "the runc shim", seen, runc)
	})
	t.Run("runsc", func(t *testing.T) {
		var res result
		seen := execsDuring(stateDir, []string{"runsc-sandbox", "runsc-gofer"}, func() {
			res, _ = python(t, "import time; time.sleep(1); print('ok')", "--runtime", "runsc")
		})
		if res.Status != "exited" || res.Stdout != "ok\n" {
			t.Fatalf("run: %+v", res)
		}
		assertOnly(t, "runsc's sandbox and gofer", seen, runsc)
	})
	assertClean(t)
}

// lineOf returns the line of doctor's output for the check called name.
func lineOf(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == name {
			return l
		}
	}
	return ""
}

// compatRunc is Debian 12's runc 1.1.5, unpacked by 'make test-deps'.
const compatRunc = "/usr/local/lib/boxer/compat/runc/usr/sbin/runc"

// TestDoctorWarnsOldRunc runs a private containerd whose PATH finds Debian's
// runc 1.1.5 first (a runc beside the daemon's binary comes first), checks
// that its sandboxes do run that runc, and that 'boxer doctor' names it and
// warns, naming the CVEs it lacks the fixes for.
func TestDoctorWarnsOldRunc(t *testing.T) {
	if out, err := exec.Command(compatRunc, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "runc version 1.1.") {
		t.Fatalf("%s: %q %v: run 'make test-deps'", compatRunc, out, err)
	}
	base, err := os.MkdirTemp("", "bxo-")
	if err != nil {
		t.Fatal(err)
	}
	// As /run is (see TestMain).
	must(t, os.Chmod(base, 0o711))
	bin := filepath.Join(base, "bin")
	must(t, os.Mkdir(bin, 0o755))
	must(t, os.Symlink(filepath.Join(daemon.LibexecDir, "containerd"), filepath.Join(bin, "containerd")))
	must(t, os.Symlink(compatRunc, filepath.Join(bin, "runc")))
	state := filepath.Join(base, "s")
	env := append(boxerEnv(filepath.Join(base, "r"), state), "BOXER_CONTAINERD="+filepath.Join(bin, "containerd"))
	t.Cleanup(func() {
		stopDaemon(env)
		os.RemoveAll(base)
	})
	doctor := func() string {
		cmd := exec.Command(boxerBin, "doctor")
		cmd.Env = env
		out, _ := cmd.Output()
		return lineOf(string(out), "runc")
	}
	wantPath := filepath.Join(bin, "runc") + " (runc version 1.1."
	// Before the daemon starts: the PATH boxer will give it.
	if l := doctor(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, wantPath) || !strings.Contains(l, "private containerd boxer starts") || !strings.Contains(l, daemon.RuncEscapeCVEs) {
		t.Errorf("doctor before start: %q, want a warning naming %s and %s", l, wantPath, daemon.RuncEscapeCVEs)
	}
	setup := exec.Command(boxerBin, "setup", "--lang", "bash")
	setup.Env = env
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("setup: %v: %s", err, out)
	}
	var out []byte
	seen := execsDuring(state, []string{"runc"}, func() {
		cmd := exec.Command(boxerBin, "run", "--lang", "bash", "-c", "sleep 1; echo ok")
		cmd.Env = env
		out, err = cmd.CombinedOutput()
	})
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("run: %v: %q", err, out)
	}
	// The shim resolves "runc" on the daemon's PATH: the symlink, whose
	// process runs the binary it points to.
	assertOnly(t, "the runc shim", seen, compatRunc)
	// Running: the PATH read from the daemon's environment.
	if l := doctor(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, wantPath) || !strings.Contains(l, "PATH of containerd pid ") || !strings.Contains(l, daemon.RuncEscapeCVEs) {
		t.Errorf("doctor with the daemon running: %q, want a warning naming %s, containerd's PATH and %s", l, wantPath, daemon.RuncEscapeCVEs)
	}
	for _, p := range processesMatching(base) {
		t.Errorf("process left behind: %s", p)
	}
}

// TestDoctorLeavesNothing runs 'boxer doctor', whose runsc platform probes
// start sandboxes (a KVM one may hang and be killed at its deadline), checks
// that it names the pinned runtimes, and that no cgroup (in every v1 controller and the cgroup2 mount), no
// mount, no runsc process and no temporary directory of it remains.
func TestDoctorLeavesNothing(t *testing.T) {
	cgBefore := cgroupTree()
	mountsBefore := mountPoints()
	tmpBefore := tmpEntries()
	r := boxer(t, nil, "doctor")
	if !strings.Contains(r.stdout, "runsc ptrace   works") {
		t.Fatalf("doctor ran no runsc probe:\n%s", r.stdout)
	}
	// It names the runtimes: the test's containerd runs the pinned runc.
	runc, runsc := filepath.Join(daemon.LibexecDir, "runc"), filepath.Join(daemon.LibexecDir, "runsc")
	runcVersion, gvisorVersion := strings.TrimPrefix(pin(t, "RUNC_VERSION"), "v"), pin(t, "GVISOR_VERSION")
	if l := lineOf(r.stdout, "runc"); !strings.HasPrefix(l, "ok") || !strings.Contains(l, runc+" (runc version "+runcVersion) || !strings.Contains(l, "PATH of containerd pid ") {
		t.Errorf("doctor's runc line %q, want ok, %s %s, from containerd's PATH", l, runc, runcVersion)
	}
	if l := lineOf(r.stdout, "runsc"); !strings.HasPrefix(l, "ok") || !strings.Contains(l, runsc+" runsc version "+gvisorVersion) {
		t.Errorf("doctor's runsc line %q, want ok, %s %s", l, runsc, gvisorVersion)
	}
	// Other processes on the host may make and remove cgroups meanwhile:
	// what doctor leaves stays, empty; theirs go or hold processes.
	var left []string
	deadline := time.Now().Add(3 * time.Second)
	for {
		left = left[:0]
		for dir := range cgroupTree() {
			if !cgBefore[dir] && cgroupEmpty(dir) {
				left = append(left, "cgroup "+dir)
			}
		}
		for p := range mountPoints() {
			if !mountsBefore[p] && !otherWorld(p) && (strings.HasPrefix(p, os.TempDir()+"/") || strings.Contains(p, "runsc") || strings.HasSuffix(p, "null-netns")) {
				left = append(left, "mount "+p)
			}
		}
		for e := range tmpEntries() {
			if !tmpBefore[e] && (strings.HasPrefix(e, "runsc-") || strings.HasPrefix(e, "boxer-doctor-")) {
				left = append(left, "temporary directory "+filepath.Join(os.TempDir(), e))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Strings(left)
	for _, l := range left {
		t.Errorf("doctor left %s", l)
	}
	for _, p := range processesWithArgv0("runsc-sandbox", "runsc-gofer") {
		if strings.Contains(p, "runsc-do") {
			t.Errorf("doctor left a process: %s", p)
		}
	}
}

// cgroupTree lists every cgroup directory in every cgroup hierarchy mounted
// (each v1 controller, the cgroup2 mount).
func cgroupTree() map[string]bool {
	dirs := map[string]bool{}
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(data), "\n") {
		// "... mountpoint options - fstype source superoptions"
		_, after, ok := strings.Cut(line, " - ")
		f := strings.Fields(line)
		if !ok || len(f) < 5 || !strings.HasPrefix(after, "cgroup") {
			continue
		}
		_ = filepath.WalkDir(f[4], func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != f[4] {
				dirs[p] = true
			}
			return nil
		})
	}
	return dirs
}

func cgroupEmpty(dir string) bool {
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && len(bytes.TrimSpace(procs)) == 0
}

func mountPoints() map[string]bool {
	points := map[string]bool{}
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			points[f[4]] = true
		}
	}
	return points
}

func tmpEntries() map[string]bool {
	names := map[string]bool{}
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// processesWithArgv0 lists processes whose argv[0] is one of names, with
// their command lines.
func processesWithArgv0(names ...string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv0, _, _ := bytes.Cut(data, []byte{0})
		for _, n := range names {
			if string(argv0) == n {
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(data), "\x00", " "))
			}
		}
	}
	return out
}

// otherWorld says whether path p is in another test run's directory (a
// second make test on the host), whose sandboxes come and go meanwhile.
func otherWorld(p string) bool {
	return strings.HasPrefix(p, filepath.Join(os.TempDir(), "bxt-")) && p != testWorld && !strings.HasPrefix(p, testWorld+"/")
}
