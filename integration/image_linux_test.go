package integration

import (
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

func TestImageBuildIsCached(t *testing.T) {
	// Same inputs as the python preset: the image is there, so this must be
	// quick (SPEC: under a second).
	p, err := runner.LookupPreset("python")
	must(t, err)
	start := time.Now()
	r := boxer(t, nil, "image", "build", p.Image, "--packages", strings.Join(p.Packages, ","))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cached build took %s, want under 1s", d)
	}
	if strings.Contains(r.stderr, "debootstrap") {
		t.Errorf("cached build ran debootstrap: %s", r.stderr)
	}
	assertClean(t)
}

func TestImageLsAndRm(t *testing.T) {
	// A second name from the cached layer of the python preset's packages:
	// no debootstrap, a new image record.
	r := boxer(t, nil, "image", "build", "scratchpy", "--packages", pythonPackages(t))
	if r.code != 0 || !strings.Contains(r.stderr, "using cached layer") {
		t.Fatalf("build: exit %d: %s", r.code, r.stderr)
	}
	ls := boxer(t, nil, "image", "ls")
	if !strings.Contains(ls.stdout, "boxer/scratchpy") || !strings.Contains(ls.stdout, "boxer/python") {
		t.Fatalf("ls:\n%s", ls.stdout)
	}
	if run := boxer(t, nil, "run", "--image", "boxer/scratchpy", "--", "python3", "-c", "print('ok')"); run.stdout != "ok\n" {
		t.Errorf("run on built image: %q %q", run.stdout, run.stderr)
	}
	if rm := boxer(t, nil, "image", "rm", "boxer/scratchpy"); rm.code != 0 {
		t.Fatalf("rm: exit %d: %s", rm.code, rm.stderr)
	}
	if ls := boxer(t, nil, "image", "ls"); strings.Contains(ls.stdout, "scratchpy") {
		t.Errorf("image still listed after rm:\n%s", ls.stdout)
	}
	if rm := boxer(t, nil, "image", "rm", "boxer/scratchpy"); rm.code != 125 || !strings.Contains(rm.stderr, "not found") {
		t.Errorf("second rm: exit %d %q", rm.code, rm.stderr)
	}
	assertClean(t)
}

func TestImageBuildBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"image", "build"},
		{"image", "build", "x", "--packages", "--evil"},
		{"image", "build", "x", "--packages", "python3;rm"},
	} {
		r := boxer(t, nil, args...)
		if r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q, want 125 and one line", args, r.code, r.stderr)
		}
	}
	assertClean(t)
}

func TestSetupIdempotent(t *testing.T) {
	r := boxer(t, nil, "setup")
	if r.code != 0 || strings.Contains(r.stderr, "debootstrap") {
		t.Errorf("second setup: exit %d: %s", r.code, r.stderr)
	}
	assertClean(t)
}

// TestDoctor: doctor's checks, in the documented order, within 15 s: its
// waits (the runsc probes above all) run at the same time, and none hangs
// (3 s here when the host is quiet; make bench has no row for it).
func TestDoctor(t *testing.T) {
	r := boxer(t, nil, "doctor")
	if r.code != 0 {
		t.Errorf("doctor exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r.wall > 15*time.Second {
		t.Errorf("doctor took %s, want under 15s:\n%s", r.wall.Round(time.Millisecond), r.stdout)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if f := strings.Fields(line); len(f) > 1 && !slices.Contains(names, f[1]) {
			names = append(names, f[1])
		}
	}
	if want := []string{"root", "kernel", "cgroups", "userns", "containerd", "runc", "runsc", "boxer-init", "debootstrap", "socket", "image"}; !slices.Equal(names, want) {
		t.Errorf("doctor's checks %q, want %q in that order:\n%s", names, want, r.stdout)
	}
	// A namespace without the image: a required check fails, with the fix.
	r = boxer(t, nil, "--namespace", "boxer-empty", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "boxer setup --lang python") {
		t.Errorf("doctor without image: exit %d:\n%s", r.code, r.stdout)
	}
	assertClean(t)
}

func TestImageRmRefusedWhileInUse(t *testing.T) {
	if r := boxer(t, nil, "image", "build", "busypy", "--packages", pythonPackages(t)); r.code != 0 {
		t.Fatalf("build: %s", r.stderr)
	}
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--image", "boxer/busypy", "--", "python3", "-c", "import time; time.sleep(30)")
	cmd.Env = testEnv
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForTask(t)
	rm := boxer(t, nil, "image", "rm", "boxer/busypy")
	if rm.code != 125 || !strings.Contains(rm.stderr, "in use") {
		t.Errorf("rm while running: exit %d %q", rm.code, rm.stderr)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if rm := boxer(t, nil, "image", "rm", "boxer/busypy"); rm.code != 0 {
		t.Errorf("rm after the run: exit %d %q", rm.code, rm.stderr)
	}
	assertClean(t)
}

// TestPresetImagesHaveNoSetuid: no file of any preset's image keeps a
// setuid or setgid bit (the build strips them; the hostile program
// fs_setuid_none checks file capabilities too, in the python image).
func TestPresetImagesHaveNoSetuid(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range runner.Presets() {
		if seen[p.Image] {
			continue
		}
		seen[p.Image] = true
		// In the host's user namespace: the image's files are looked at
		// as their owner sees them (in a sandbox's own namespace, root's
		// files are the overflow id's and root's 0700 directories closed).
		r := boxer(t, nil, "--userns", "host", "run", "--user", "0:0", "--image", p.Image, "--", "find", "/", "-xdev", "-perm", "/6000")
		if r.code != 0 || r.stdout != "" {
			t.Errorf("%s: find -perm /6000: exit %d, found %q %s", p.Image, r.code, r.stdout, r.stderr)
		}
	}
	assertClean(t)
}

// pythonPackages is the python preset's package list, reversed: the same
// build inputs (its layer is cached by setup) given in another order.
func pythonPackages(t *testing.T) string {
	t.Helper()
	p, err := runner.LookupPreset("python")
	must(t, err)
	pkgs := slices.Clone(p.Packages)
	slices.Reverse(pkgs)
	return strings.Join(pkgs, ",")
}
