//go:build linux

package leftover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture is a host in a temporary directory: a process table, a mount
// table, a cgroup tree, boxer's run directories and the runtime's state, for
// namespace "soak" on containerd at /run/boxer/containerd.sock.
type fixture struct {
	t    *testing.T
	dir  string
	host Host
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, host: Host{
		Namespace:  "soak",
		Address:    "/run/boxer/containerd.sock",
		Proc:       filepath.Join(dir, "proc"),
		Mountinfo:  filepath.Join(dir, "mountinfo"),
		CgroupRoot: filepath.Join(dir, "cgroup"),
		Runs:       filepath.Join(dir, "state", "runs"),
		MountRoots: []string{filepath.Join(dir, "state"), filepath.Join(dir, "runc", "soak")},
		StateDirs:  []string{filepath.Join(dir, "bundles", "soak"), filepath.Join(dir, "runc", "soak")},
		TaskRoots:  []string{filepath.Join(dir, "state", "containerd", "io.containerd.runtime.v2.task")},
	}}
	// What any host has: containerd, a shim of another namespace and one
	// of another containerd, mounts elsewhere, the cgroup hierarchies.
	f.process("1", "/sbin/init")
	f.process("10", "/usr/local/lib/boxer/bin/containerd", "--config", "/run/boxer/containerd.toml")
	f.process("11", "/usr/local/lib/boxer/bin/containerd-shim-runc-v2", "-namespace", "other", "-id", "a", "-address", "/run/boxer/containerd.sock")
	f.process("12", "/usr/bin/containerd-shim-runc-v2", "-namespace", "soak", "-id", "b", "-address", "/run/containerd/containerd.sock")
	f.mount("20 1 0:20 / / rw - ext4 /dev/vda1 rw")
	f.mount("21 20 0:21 / " + filepath.Join(dir, "elsewhere") + " rw - tmpfs tmpfs rw")
	for _, c := range []string{"memory", "pids", "unified"} {
		f.mkdir("cgroup", c, "boxer", "soak")
		f.mkdir("cgroup", c, "boxer", "other", "bx-x")
	}
	f.mkdir("state", "runs")
	return f
}

func (f *fixture) mkdir(elem ...string) string {
	f.t.Helper()
	p := filepath.Join(append([]string{f.dir}, elem...)...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		f.t.Fatalf("making %s: %v", p, err)
	}
	return p
}

func (f *fixture) process(pid string, args ...string) {
	f.t.Helper()
	p := f.mkdir("proc", pid)
	if err := os.WriteFile(filepath.Join(p, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) mount(line string) {
	f.t.Helper()
	file, err := os.OpenFile(f.host.Mountinfo, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(line + "\n"); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) count() Found {
	f.t.Helper()
	found, err := f.host.Count()
	if err != nil {
		f.t.Fatalf("counting: %v", err)
	}
	return found
}

// TestHostGrowth leaves one thing of each kind the host count knows on a
// clean fixture and checks that the count after, against the one before,
// finds that thing and nothing else.
func TestHostGrowth(t *testing.T) {
	tests := []struct {
		name  string
		leave func(f *fixture)
		kind  Kind
		want  string // part of the one name Growth must report
	}{
		{
			name: "shim daemon",
			leave: func(f *fixture) {
				f.process("300", "/usr/local/lib/boxer/bin/containerd-shim-runc-v2", "-namespace", "soak", "-id", "bx-1", "-address", "/run/boxer/containerd.sock")
			},
			kind: Shims, want: "300 /usr/local/lib/boxer/bin/containerd-shim-runc-v2 -namespace soak -id bx-1",
		},
		{
			name: "shim delete",
			leave: func(f *fixture) {
				f.process("301", "containerd-shim-runc-v2", "-namespace", "soak", "-address", "/run/boxer/containerd.sock", "-id", "bx-2", "delete")
			},
			kind: Shims, want: "301 containerd-shim-runc-v2",
		},
		{
			name: "workspace tmpfs",
			leave: func(f *fixture) {
				f.mount("400 20 0:40 / " + filepath.Join(f.dir, "state", "runs", "bx-3", "workspace") + " rw - tmpfs tmpfs rw")
			},
			kind: Mounts, want: "/state/runs/bx-3/workspace",
		},
		{
			name: "mount point with a space",
			leave: func(f *fixture) {
				f.mount(`401 20 0:41 / ` + filepath.Join(f.dir, "runc", "soak", `a\040b`) + ` rw - tmpfs tmpfs rw`)
			},
			kind: Mounts, want: "/runc/soak/a b",
		},
		{
			name: "rootfs at the root itself",
			leave: func(f *fixture) {
				f.mount("402 20 0:42 / " + filepath.Join(f.dir, "runc", "soak") + " rw - tmpfs tmpfs rw")
			},
			kind: Mounts, want: "402 ",
		},
		{
			name:  "cgroup v1",
			leave: func(f *fixture) { f.mkdir("cgroup", "memory", "boxer", "soak", "bx-4") },
			kind:  Cgroups, want: "memory/boxer/soak/bx-4",
		},
		{
			name:  "cgroup v2",
			leave: func(f *fixture) { f.mkdir("cgroup", "boxer", "soak", "bx-5") },
			kind:  Cgroups, want: "cgroup/boxer/soak/bx-5",
		},
		{
			name:  "run directory",
			leave: func(f *fixture) { f.mkdir("state", "runs", "bx-6") },
			kind:  RunDirs, want: "runs/bx-6",
		},
		{
			name:  "task bundle",
			leave: func(f *fixture) { f.mkdir("bundles", "soak", "bx-7") },
			kind:  RuntimeState, want: "bundles/soak/bx-7",
		},
		{
			name: "runsc state",
			leave: func(f *fixture) {
				if err := os.WriteFile(filepath.Join(f.mkdir("runc", "soak"), "bx-8_sandbox:bx-8.state"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			kind: RuntimeState, want: "runc/soak/bx-8_sandbox:bx-8.state",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.count()
			if g := Growth(before, f.count()); g.Total() != 0 {
				t.Fatalf("growth of an unchanged host = %v, want none", g)
			}
			tc.leave(f)
			g := Growth(before, f.count())
			if g.Total() != 1 || len(g[tc.kind]) != 1 {
				t.Fatalf("growth = %v, want one of %s", g, tc.kind)
			}
			if !strings.Contains(g[tc.kind][0], tc.want) {
				t.Errorf("%s left = %q, want it to name %q", tc.kind, g[tc.kind][0], tc.want)
			}
		})
	}
}

// TestHostIgnoresOthers checks that what is not the namespace's is never
// counted: shims of other namespaces or containerds, mounts elsewhere,
// cgroups of other namespaces.
func TestHostIgnoresOthers(t *testing.T) {
	f := newFixture(t)
	if found := f.count(); found.Total() != 0 {
		t.Errorf("found on a clean host: %v, want nothing", found)
	}
}

// TestGrowthKeepsWhatWasThere checks that what was there before is not
// blamed, and that a thing that went while another came is still growth.
func TestGrowthKeepsWhatWasThere(t *testing.T) {
	tests := []struct {
		name          string
		before, after Found
		want          Found
	}{
		{
			name:   "unchanged",
			before: Found{Containers: {"a"}, Mounts: {"1 /x"}},
			after:  Found{Containers: {"a"}, Mounts: {"1 /x"}},
			want:   Found{},
		},
		{
			name:   "removed",
			before: Found{Containers: {"a", "b"}},
			after:  Found{Containers: {"a"}},
			want:   Found{},
		},
		{
			name:   "one went, another came",
			before: Found{Tasks: {"a"}},
			after:  Found{Tasks: {"b"}},
			want:   Found{Tasks: {"b"}},
		},
		{
			name:   "remounted at the same point",
			before: Found{Mounts: {"1 /x"}},
			after:  Found{Mounts: {"1 /x", "2 /x"}},
			want:   Found{Mounts: {"2 /x"}},
		},
		{
			name:   "same name, other kind",
			before: Found{Containers: {"bx-1"}},
			after:  Found{Containers: {"bx-1"}, Snapshots: {"bx-1"}},
			want:   Found{Snapshots: {"bx-1"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Growth(tc.before, tc.after)
			for _, k := range Kinds {
				if !slices.Equal(got[k], tc.want[k]) {
					t.Errorf("growth of %s = %q, want %q", k, got[k], tc.want[k])
				}
			}
		})
	}
}

// TestOtherNamespaceNotCounted: what another namespace's sandboxes leave
// while the count runs (their rootfs under the task directory, a run
// directory that names another namespace) is not this namespace's; the
// same things of this namespace are.
func TestOtherNamespaceNotCounted(t *testing.T) {
	f := newFixture(t)
	before := f.count()
	tasks := filepath.Join(f.dir, "state", "containerd", "io.containerd.runtime.v2.task")
	for ns, id := range map[string]string{"dev": "bxs-1", "soak": "bx-2"} {
		run := f.mkdir("state", "runs", id)
		if err := os.WriteFile(filepath.Join(run, "namespace"), []byte(ns), 0o600); err != nil {
			t.Fatal(err)
		}
		f.mount("50" + id[len(id)-1:] + " 20 0:50 / " + filepath.Join(tasks, ns, id, "rootfs") + " rw - overlay overlay rw")
		f.mount("60" + id[len(id)-1:] + " 20 0:60 / " + filepath.Join(run, "workspace") + " rw - tmpfs tmpfs rw")
	}
	grown := Growth(before, f.count())
	if got := grown[Mounts]; len(got) != 2 || !strings.Contains(strings.Join(got, " "), "soak/bx-2/rootfs") || !strings.Contains(strings.Join(got, " "), "runs/bx-2/workspace") {
		t.Errorf("mounts counted: %v, want the two of bx-2 only", got)
	}
	if got := grown[RunDirs]; len(got) != 1 || !strings.HasSuffix(got[0], "bx-2") {
		t.Errorf("run directories counted: %v, want bx-2 only", got)
	}
}
