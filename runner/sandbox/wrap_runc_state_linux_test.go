package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// runcFastChecked is the runc release whose libcontainer boxer-wrap's
// runc-fast (init/boxer-wrap.c) was last read against: its state.json,
// its exec.fifo (Container.exec) and its destroy (state_linux.go). A pin
// that moves fails TestWrapRuncDrift until someone has read the new
// release's and moved this.
const runcFastChecked = "1.5.3"

// runcStateKeys are the top-level keys of runc's state.json that
// runcFastChecked writes (libcontainer's State and BaseState). A new one
// may name something a destroy must now remove (as intel_rdt_path did),
// which boxer-wrap's delete would not.
var runcStateKeys = []string{
	"id", "init_process_pid", "init_process_start", "created", "config",
	"rootless", "cgroup_paths", "namespace_paths", "external_descriptors", "intel_rdt_path",
}

// freezeFiles are the files of a container's cgroups that boxer-wrap
// reads to tell a paused one, by cgroup_paths key (v1's freezer, v2's ""),
// and what they hold when it is not.
var freezeFiles = map[string][2]string{"freezer": {"freezer.state", "THAWED\n"}, "": {"cgroup.freeze", "0\n"}}

// runcNamespace is a namespace of runc's state.json's config.
type runcNamespace struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// TestWrapRuncDrift: what boxer-wrap's runc-fast reads of runc's state and
// leaves behind is what the pinned runc (the Makefile's, built by 'make
// deps') writes and leaves. For a real container of the pinned runc: the
// state.json bytes boxer-wrap looks for (the init's PID and start time as
// /proc says them, the cgroup paths, the PID namespace, no key it does not
// know), the freezer files it reads and the values it compares them with,
// the exec.fifo it opens; and the host as runc's own start and delete
// leave it is the host as boxer-wrap's leave it: the same as before the
// container was created.
func TestWrapRuncDrift(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("runs containers: run as root")
	}
	f := newRuncFast(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	defer func() {
		for _, n := range []string{"runc", "fast"} {
			exec.Command(f.runc, "--root", f.root, "delete", "--force", f.prefix+n).Run()
		}
	}()

	// The runc here is the pinned one, and boxer-wrap was read against it.
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`(?m)^RUNC_VERSION\s*:=\s*v(\S+)$`).FindSubmatch(mk)
	out, err := exec.Command(f.runc, "--version").Output()
	if err != nil || pin == nil {
		t.Fatalf("runc --version: %v; the Makefile's pin: %q", err, pin)
	}
	if got, _, _ := strings.Cut(string(out), "\n"); string(pin[1]) != runcFastChecked || got != "runc version "+runcFastChecked {
		t.Fatalf("the Makefile pins runc %s and %s is %q; boxer-wrap's runc-fast was read against runc %s: read the pinned "+
			"release's libcontainer (state.json, exec.fifo, destroy), fix boxer-wrap, then move runcFastChecked (and run 'make deps')",
			pin[1], f.runc, got, runcFastChecked)
	}

	before := f.footprint()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()

	// The real runc's container: its state as boxer-wrap reads it.
	id := f.prefix + "runc"
	pid := f.create("runc", f.bundle, w)
	dir := filepath.Join(f.root, id)
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Pid      int               `json:"init_process_pid"`
		Start    uint64            `json:"init_process_start"`
		Cgroups  map[string]string `json:"cgroup_paths"`
		Rootless bool              `json:"rootless"`
		Config   struct {
			Namespaces []runcNamespace `json:"namespaces"`
		} `json:"config"`
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	for k := range top {
		if !slices.Contains(runcStateKeys, k) {
			t.Errorf("runc's state.json has a key %q that runc %s did not write: read what its destroy does with it", k, runcFastChecked)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))[19]
	for _, want := range []string{
		fmt.Sprintf(`"init_process_pid":%d,`, pid),
		`"init_process_start":` + start + `,`,
		`"cgroup_paths":{"`,
		`{"type":"NEWPID"}`,
	} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("runc's state.json lacks %s, which boxer-wrap looks for", want)
		}
	}
	if st.Pid != pid || fmt.Sprint(st.Start) != start || st.Rootless {
		t.Errorf("state: init %d started %d rootless %t, want %d started %s, not rootless", st.Pid, st.Start, st.Rootless, pid, start)
	}
	if !slices.Contains(st.Config.Namespaces, runcNamespace{Type: "NEWPID"}) {
		t.Errorf("state's namespaces %+v: no PID namespace of its own", st.Config.Namespaces)
	}
	frozen := 0
	for k, p := range st.Cgroups {
		if !strings.HasPrefix(p, "/sys/fs/cgroup/") || strings.Contains(p, "/..") || strings.ContainsAny(p, `"\`) {
			t.Errorf("cgroup %q: %q, not a plain path under /sys/fs/cgroup as boxer-wrap takes it", k, p)
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Errorf("cgroup %q: %s is no directory (%v)", k, p, err)
		}
		// What boxer-wrap's thawed reads, and the value it wants.
		fw, ok := freezeFiles[k]
		if !ok {
			continue
		}
		file, want := fw[0], fw[1]
		got, err := os.ReadFile(filepath.Join(p, file))
		if err != nil || string(got) != want {
			t.Errorf("%s/%s: %q (%v), want %q: boxer-wrap would take the container for paused", p, file, got, err, want)
		}
		frozen++
	}
	if frozen == 0 {
		t.Errorf("cgroups %v: neither a v1 freezer nor a v2 cgroup.freeze, which boxer-wrap reads to tell a paused container", st.Cgroups)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if e.Type() != 0 && e.Type() != os.ModeNamedPipe {
			t.Errorf("runc's state directory holds %s (%s): boxer-wrap's delete leaves such a container to runc", e.Name(), e.Type())
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "exec.fifo")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("a created container's exec.fifo: %v %v (state directory %v), want a FIFO, which boxer-wrap's start opens", fi, err, names)
	}

	// runc's own start and delete, then boxer-wrap's of a twin: each
	// leaves the host as it was.
	if b, err := exec.Command(f.runc, "--root", f.root, "start", id).CombinedOutput(); err != nil {
		t.Fatalf("runc start: %v: %s", err, b)
	}
	buf := make([]byte, 16)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "ran\n" {
		t.Fatalf("the program runc started printed %q, %v", buf[:n], err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "exec.fifo")); !os.IsNotExist(err) {
		t.Errorf("exec.fifo after runc's start: %v, want it gone, as boxer-wrap's start leaves it", err)
	}
	reap(t, pid)
	if b, err := exec.Command(f.runc, "--root", f.root, "delete", id).CombinedOutput(); err != nil {
		t.Fatalf("runc delete: %v: %s", err, b)
	}
	if after := f.footprint(); !slices.Equal(after, before) {
		t.Errorf("runc's delete left the host as %v, before the container %v: boxer-wrap's delete would not do what runc's now does", after, before)
	}
	pid = f.create("fast", f.bundle, w)
	for _, c := range []string{"start", "delete"} {
		if c == "delete" {
			if n, err := r.Read(buf); err != nil || string(buf[:n]) != "ran\n" {
				t.Fatalf("the program boxer-wrap started printed %q, %v", buf[:n], err)
			}
			reap(t, pid)
		}
		if reached, out, err := f.call(c, f.prefix+"fast"); err != nil || reached {
			t.Fatalf("%s: reached runc %v, %v: %s (boxer-wrap no longer takes runc's state for one it knows)", c, reached, err, out)
		}
	}
	if after := f.footprint(); !slices.Equal(after, before) {
		t.Errorf("boxer-wrap's delete left the host as %v, before the container %v", after, before)
	}
}

// footprint is what of this test's containers is on the host: runc's root,
// cgroup directories named after them, mounts naming them or the bundle.
func (f *runcFast) footprint() []string {
	f.t.Helper()
	var fp []string
	_ = filepath.WalkDir(f.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != f.root {
			fp = append(fp, p)
		}
		return nil
	})
	for _, pattern := range []string{"/sys/fs/cgroup/", "/sys/fs/cgroup/*/", "/sys/fs/cgroup/*/*/"} {
		m, _ := filepath.Glob(pattern + f.prefix + "*")
		fp = append(fp, m...)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		f.t.Fatal(err)
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.Contains(l, f.prefix) || strings.Contains(l, filepath.Dir(f.bundle)) {
			fp = append(fp, l)
		}
	}
	slices.Sort(fp)
	return fp
}
