package oci

import (
	"context"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func hardened(t *testing.T, opts ...SpecOpts) *specs.Spec {
	t.Helper()
	s, err := New(context.Background(), "bx-test", append([]SpecOpts{WithHardenedBase}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHardenedBase(t *testing.T) {
	s := hardened(t)
	if !s.Root.Readonly {
		t.Error("root is writable")
	}
	if !s.Process.NoNewPrivileges {
		t.Error("no_new_privs off")
	}
	c := s.Process.Capabilities
	for name, set := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective, "inheritable": c.Inheritable, "permitted": c.Permitted, "ambient": c.Ambient} {
		if set == nil || len(set) != 0 {
			t.Errorf("%s capabilities = %v, want empty (not nil)", name, set)
		}
	}
	if s.Process.User.UID != 65534 || s.Hostname != Hostname {
		t.Errorf("user %d hostname %q", s.Process.User.UID, s.Hostname)
	}
	var ns []specs.LinuxNamespaceType
	for _, n := range s.Linux.Namespaces {
		if n.Path != "" {
			t.Errorf("namespace %s joins %s: want a fresh one", n.Type, n.Path)
		}
		ns = append(ns, n.Type)
	}
	for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.NetworkNamespace} {
		if !slices.Contains(ns, want) {
			t.Errorf("no fresh %s namespace", want)
		}
	}
	if slices.Contains(ns, specs.UserNamespace) {
		t.Error("user namespace: not used by boxer")
	}
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/sys/firmware"} {
		if !slices.Contains(s.Linux.MaskedPaths, p) {
			t.Errorf("%s not masked", p)
		}
	}
	if !slices.Contains(s.Linux.ReadonlyPaths, "/proc/sys") {
		t.Error("/proc/sys not read-only")
	}
	if d := s.Linux.Resources.Devices; len(d) == 0 || d[0].Allow || d[0].Access != "rwm" {
		t.Errorf("device cgroup does not start with deny-all: %+v", d)
	}
	if len(s.Linux.Devices) != 0 {
		t.Errorf("extra device nodes: %+v", s.Linux.Devices)
	}
	mounts := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
	}
	if !slices.Contains(mounts["/sys"].Options, "ro") {
		t.Error("/sys not read-only")
	}
	if mounts["/tmp"].Type != "tmpfs" || mounts[Workspace].Type != "tmpfs" {
		t.Error("/tmp and /workspace must be tmpfs")
	}
	core := false
	for _, r := range s.Process.Rlimits {
		if r.Type == "RLIMIT_CORE" && r.Hard == 0 && r.Soft == 0 {
			core = true
		}
	}
	if !core {
		t.Error("RLIMIT_CORE is not 0")
	}
}

func TestWithLimits(t *testing.T) {
	s := hardened(t, WithLimits(Limits{MemoryBytes: 64 << 20, CPUs: 1.5, Pids: 32, TmpBytes: 8 << 20, NoFile: 512}))
	r := s.Linux.Resources
	if *r.Memory.Limit != 64<<20 || *r.Memory.Swap != 64<<20 {
		t.Errorf("memory %d swap %d, want both 64 MiB (no swap)", *r.Memory.Limit, *r.Memory.Swap)
	}
	if *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 {
		t.Errorf("cpu quota %d period %d", *r.CPU.Quota, *r.CPU.Period)
	}
	if *r.Pids.Limit != 32 {
		t.Errorf("pids %d", *r.Pids.Limit)
	}
	for _, m := range s.Mounts {
		if m.Destination == "/tmp" || m.Destination == Workspace {
			if !slices.Contains(m.Options, "size=8388608") || strings.Count(strings.Join(m.Options, ","), "size=") != 1 {
				t.Errorf("%s options %v, want one size=8388608", m.Destination, m.Options)
			}
		}
	}
	found := false
	for _, rl := range s.Process.Rlimits {
		if rl.Type == "RLIMIT_NOFILE" {
			found = rl.Hard == 512 && rl.Soft == 512
		}
	}
	if !found {
		t.Error("RLIMIT_NOFILE not 512")
	}
}

func TestInvalidOptionsRefused(t *testing.T) {
	tests := []struct {
		name string
		opt  SpecOpts
	}{
		{"zero memory", WithLimits(Limits{CPUs: 1, Pids: 1, TmpBytes: 1, NoFile: 1})},
		{"no seccomp", WithSeccomp(nil)},
		{"empty seccomp", WithSeccomp(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow})},
		{"no command", WithProcess(nil, nil, "")},
		{"init without a command", WithInit(false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(context.Background(), "x", WithHardenedBase, tc.opt); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestWithUserOwnsWorkspace(t *testing.T) {
	s := hardened(t, WithUser(1000, 1001))
	for _, m := range s.Mounts {
		if m.Destination == Workspace && (!slices.Contains(m.Options, "uid=1000") || !slices.Contains(m.Options, "gid=1001")) {
			t.Errorf("workspace options %v", m.Options)
		}
	}
	if s.Process.User.UID != 1000 || s.Process.User.GID != 1001 {
		t.Errorf("user %+v", s.Process.User)
	}
}

// TestWithInit: boxer-init runs the process's argv, held by the gate when
// asked.
func TestWithInit(t *testing.T) {
	for _, gate := range []bool{false, true} {
		s := hardened(t, WithProcess([]string{"python3", "-c", "1"}, nil, ""), WithInit(gate))
		want := []string{"/code/.boxer-init", "--", "python3", "-c", "1"}
		if gate {
			want = []string{"/code/.boxer-init", "-g", "--", "python3", "-c", "1"}
		}
		if !slices.Equal(s.Process.Args, want) {
			t.Errorf("gate %v: args %q, want %q", gate, s.Process.Args, want)
		}
	}
}
