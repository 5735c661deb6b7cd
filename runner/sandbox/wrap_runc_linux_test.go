package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/boxer-dev/boxer/daemon"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// runcFast is a real runc's root and bundle, and a wrapper file that
// interprets runc-fast in front of a logger of the calls that reach runc.
type runcFast struct {
	t                       *testing.T
	runc, root, log, wrap   string
	bundle, hooked, hostPID string
	prefix                  string
}

func newRuncFast(t *testing.T) *runcFast {
	runc, err := daemon.RuntimeBinary("runc")
	if err != nil {
		t.Fatalf("runc: %v (run 'make deps')", err)
	}
	wrap := buildWrap(t)
	dir := t.TempDir()
	f := &runcFast{t: t, runc: runc, root: filepath.Join(dir, "root"), log: filepath.Join(dir, "calls"),
		prefix: fmt.Sprintf("bxt-fast-%d-", os.Getpid())}
	logger := filepath.Join(dir, "runc")
	if err := os.WriteFile(logger, []byte("#!/bin/sh\necho \"$*\" >> "+f.log+"\nexec "+runc+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.wrap = writeWrapper(t, wrap, dir, "runc-userns", "rlimit-core 0", "runc-fast start-delete", "exec "+logger)
	// The container's program: says it ran, or with an argument waits
	// for a signal, named as if /proc/PID/stat said it were a zombie to
	// a reader that looked for the first ')'. Static, so that the rootfs
	// holds it alone.
	src := filepath.Join(dir, "prog.c")
	prog := `#include <sys/prctl.h>
#include <unistd.h>
int main(int c, char **v) {
	(void)v;
	if (c > 1) {
		prctl(PR_SET_NAME, ") Z 1 1 1 0 -1");
		pause();
	}
	return write(1, "ran\n", 4) != 4;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-static", "-Os", "-o", filepath.Join(dir, "rootfs", "prog"), src).CombinedOutput(); err != nil {
		t.Fatalf("building the container's program: %v: %s", err, out)
	}
	f.bundle = f.writeBundle(dir, "bundle", func(*specs.Spec) {})
	f.hooked = f.writeBundle(dir, "hooked", func(s *specs.Spec) {
		s.Hooks = &specs.Hooks{Poststart: []specs.Hook{{Path: "/bin/true"}}}
	})
	f.hostPID = f.writeBundle(dir, "host-pid", func(s *specs.Spec) {
		var ns []specs.LinuxNamespace
		for _, n := range s.Linux.Namespaces {
			if n.Type != specs.PIDNamespace {
				ns = append(ns, n)
			}
		}
		s.Linux.Namespaces = ns
	})
	return f
}

// writeBundle writes a bundle on dir's rootfs with runc's default spec,
// no terminal, the program, changed by change.
func (f *runcFast) writeBundle(dir, name string, change func(*specs.Spec)) string {
	b := filepath.Join(dir, name)
	if err := os.Mkdir(b, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if out, err := exec.Command(f.runc, "spec", "--bundle", b).CombinedOutput(); err != nil {
		f.t.Fatalf("runc spec: %v: %s", err, out)
	}
	var s specs.Spec
	data, err := os.ReadFile(filepath.Join(b, "config.json"))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	s.Root = &specs.Root{Path: filepath.Join(dir, "rootfs")}
	s.Process.Terminal, s.Process.Args = false, []string{"/prog"}
	change(&s)
	if data, err = json.Marshal(&s); err == nil {
		err = os.WriteFile(filepath.Join(b, "config.json"), data, 0o644)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// create creates container name with real runc, its output into out, and
// returns its init's PID. The test is the child subreaper meanwhile, so
// that the init, orphaned, is its child to reap.
func (f *runcFast) create(name, bundle string, out *os.File, args ...string) int {
	f.t.Helper()
	if len(args) > 0 {
		f.setArgs(bundle, args)
	}
	pidFile := filepath.Join(bundle, name+".pid")
	cmd := exec.Command(f.runc, "--root", f.root, "create", "--bundle", bundle, "--pid-file", pidFile, f.prefix+name)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("runc create %s: %v", name, err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		f.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		f.t.Fatal(err)
	}
	return pid
}

func (f *runcFast) setArgs(bundle string, args []string) {
	p := filepath.Join(bundle, "config.json")
	var s specs.Spec
	data, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err == nil {
		s.Process.Args = args
		data, err = json.Marshal(&s)
	}
	if err == nil {
		err = os.WriteFile(p, data, 0o644)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// call runs the wrapper as containerd's runc shim runs runc, and says
// whether the call reached runc, with what runc or boxer-wrap printed.
func (f *runcFast) call(args ...string) (reached bool, out string, err error) {
	before, _ := os.ReadFile(f.log)
	full := append([]string{"--root", f.root, "--log", f.log + ".json", "--log-format", "json"}, args...)
	b, err := exec.Command(f.wrap, full...).CombinedOutput()
	after, _ := os.ReadFile(f.log)
	return len(after) > len(before), string(b), err
}

// cgroups are the directories state.json names for container name.
func (f *runcFast) cgroups(name string) []string {
	f.t.Helper()
	var st struct {
		Paths map[string]string `json:"cgroup_paths"`
	}
	data, err := os.ReadFile(filepath.Join(f.root, f.prefix+name, "state.json"))
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err != nil || len(st.Paths) == 0 {
		f.t.Fatalf("state of %s: %v, cgroups %v", name, err, st.Paths)
	}
	var dirs []string
	for _, p := range st.Paths {
		dirs = append(dirs, p)
	}
	return dirs
}

func reap(t *testing.T, pid int) {
	t.Helper()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatalf("waiting for the container's init %d: %v", pid, err)
	}
}

// TestWrapRuncFast: boxer-wrap does runc's start of a created container
// and delete of a stopped one itself, leaving what runc leaves (the
// program ran, no FIFO, no state, no cgroup), and hands every other call
// to runc: a running container's delete, a second start, a start after
// the init died, a container with hooks or in the host's PID namespace,
// another command.
func TestWrapRuncFast(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("runs containers: run as root")
	}
	f := newRuncFast(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	leftovers := func() {
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			exec.Command(f.runc, "--root", f.root, "delete", "--force", f.prefix+n).Run()
		}
	}
	defer leftovers()

	// a: created, started and deleted by boxer-wrap alone.
	pid := f.create("a", f.bundle, w)
	cgroups := f.cgroups("a")
	if reached, out, err := f.call("start", f.prefix+"a"); err != nil || reached {
		t.Fatalf("start: reached runc %v, %v: %s", reached, err, out)
	}
	buf := make([]byte, 16)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "ran\n" {
		t.Fatalf("the started program printed %q, %v", buf[:n], err)
	}
	if _, err := os.Lstat(filepath.Join(f.root, f.prefix+"a", "exec.fifo")); !os.IsNotExist(err) {
		t.Errorf("exec.fifo after start: %v, want it gone", err)
	}
	reap(t, pid)
	if reached, out, err := f.call("delete", f.prefix+"a"); err != nil || reached {
		t.Fatalf("delete: reached runc %v, %v: %s", reached, err, out)
	}
	if _, err := os.Lstat(filepath.Join(f.root, f.prefix+"a")); !os.IsNotExist(err) {
		t.Errorf("state after delete: %v, want it gone", err)
	}
	for _, c := range cgroups {
		if _, err := os.Lstat(c); !os.IsNotExist(err) {
			t.Errorf("cgroup %s after delete: %v, want it gone", c, err)
		}
	}

	// b: running, so its delete and a second start are runc's, which
	// refuses them; stopped, its delete is boxer-wrap's again.
	pid = f.create("b", f.bundle, w, "/prog", "wait")
	if reached, out, err := f.call("start", f.prefix+"b"); err != nil || reached {
		t.Fatalf("start of b: reached runc %v, %v: %s", reached, err, out)
	}
	for _, c := range [][]string{{"delete", f.prefix + "b"}, {"start", f.prefix + "b"}} {
		if reached, out, err := f.call(c...); err == nil || !reached {
			t.Errorf("%s of a running container: reached runc %v, error %v (%s), want runc's refusal", c[0], reached, err, out)
		}
	}
	if reached, out, err := f.call("state", f.prefix+"b"); err != nil || !reached || !strings.Contains(out, `"status": "running"`) {
		t.Errorf("state: reached runc %v, %v: %s", reached, err, out)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reap(t, pid)
	if reached, out, err := f.call("delete", f.prefix+"b"); err != nil || reached {
		t.Errorf("delete of the killed b: reached runc %v, %v: %s", reached, err, out)
	}

	// c: its init killed before the start, which runc refuses.
	pid = f.create("c", f.bundle, w, "/prog")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reap(t, pid)
	if reached, out, err := f.call("start", f.prefix+"c"); err == nil || !reached {
		t.Errorf("start after the init died: reached runc %v, error %v (%s), want runc's refusal", reached, err, out)
	}
	if reached, out, err := f.call("delete", f.prefix+"c"); err != nil || reached {
		t.Errorf("delete of c: reached runc %v, %v: %s", reached, err, out)
	}

	// d, e: a hook, which boxer-wrap does not run, and the host's PID
	// namespace, where processes may outlive the init: runc does all.
	for name, bundle := range map[string]string{"d": f.hooked, "e": f.hostPID} {
		pid := f.create(name, bundle, w)
		for _, c := range []string{"start", "delete"} {
			if c == "delete" {
				reap(t, pid)
			}
			if reached, out, err := f.call(c, f.prefix+name); err != nil || !reached {
				t.Errorf("%s of %s: reached runc %v, %v: %s", c, bundle, reached, err, out)
			}
		}
		if n, err := r.Read(buf); err != nil || string(buf[:n]) != "ran\n" {
			t.Errorf("%s's program printed %q, %v", bundle, buf[:n], err)
		}
	}
	if entries, err := os.ReadDir(f.root); err != nil || len(entries) != 0 {
		t.Errorf("runc's root at the end: %v %v, want it empty", entries, err)
	}
}
