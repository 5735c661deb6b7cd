package sandbox

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestBuildSpec: the spec is a function of the normalized request, the
// image's environment and the host's facts.
func TestBuildSpec(t *testing.T) {
	host := HostFacts{Namespace: "ns", NoFile: 512}
	dirs := Dirs{Code: "/run/boxer/runs/bx-1/code", Workspace: "/run/boxer/runs/bx-1/workspace"}
	netDirs := dirs
	netDirs.Net = &Net{Netns: "/run/boxer/runs/bx-1/netns", ResolvConf: "/run/boxer/runs/bx-1/resolv.conf",
		Env: []string{"HTTP_PROXY=http://10.201.0.1:3128", "HTTPS_PROXY=http://10.201.0.1:3128"}}
	norm := func(r contract.Request) contract.Request {
		n, err := r.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sessionDirs := dirs
	sessionDirs.Tmp, sessionDirs.Home = "/run/boxer/runs/bx-1/files/tmp", "/run/boxer/runs/bx-1/files/home"
	usernsDirs := dirs
	usernsDirs.Userns = &Userns{Path: "/run/boxer/runs/bx-1/userns", Base: 1 << 31}
	custom := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow}}}
	tests := []struct {
		name  string
		req   contract.Request
		dirs  Dirs
		gate  bool
		check func(t *testing.T, s *specs.Spec)
	}{
		{"python preset", norm(contract.Request{Lang: "python", Env: []string{"HOME=/tmp"}}), dirs, false, func(t *testing.T, s *specs.Spec) {
			if want := []string{oci.InitPath, "--", "python3", "-u", "/code/main.py"}; !slices.Equal(s.Process.Args, want) {
				t.Errorf("args %q, want %q", s.Process.Args, want)
			}
			// Image, then preset, then request; later names win.
			if want := []string{"PATH=/usr/bin", "HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1"}; !slices.Equal(s.Process.Env, want) {
				t.Errorf("env %q, want %q", s.Process.Env, want)
			}
			if u := s.Process.User; u.UID != contract.DefaultUID || u.GID != contract.DefaultGID {
				t.Errorf("user %d:%d", u.UID, u.GID)
			}
			if s.Linux.CgroupsPath != "/boxer/ns/bx-1" {
				t.Errorf("cgroups path %q", s.Linux.CgroupsPath)
			}
			if got := *s.Linux.Resources.Pids.Limit; got != contract.DefaultPids+1 {
				t.Errorf("pids %d, want %d and boxer-init", got, contract.DefaultPids)
			}
			if got := *s.Linux.Resources.Memory.Limit; got != contract.DefaultMemory {
				t.Errorf("memory %d", got)
			}
			if !hasMount(s, oci.CodeDir, dirs.Code, "ro") || !hasMount(s, oci.Workspace, dirs.Workspace, "rw") {
				t.Errorf("mounts %+v", s.Mounts)
			}
			if rl := rlimit(s, "RLIMIT_NOFILE"); rl == nil || rl.Hard != 512 || rl.Soft != 512 {
				t.Errorf("RLIMIT_NOFILE %+v, want the host's 512", rl)
			}
			if rlimit(s, "RLIMIT_NPROC") != nil {
				t.Error("RLIMIT_NPROC set under runc")
			}
			if len(s.Linux.Seccomp.Syscalls) != len(seccomp.DefaultProfile().Syscalls) {
				t.Error("not the default seccomp profile")
			}
		}},
		{"command in an image", norm(contract.Request{Image: "img", Args: []string{"/bin/true", "x"}, UID: 1000, GID: 100, UserSet: true}), dirs, false, func(t *testing.T, s *specs.Spec) {
			if !slices.Equal(s.Process.Args, []string{oci.InitPath, "--", "/bin/true", "x"}) {
				t.Errorf("args %q", s.Process.Args)
			}
			if u := s.Process.User; u.UID != 1000 || u.GID != 100 {
				t.Errorf("user %d:%d", u.UID, u.GID)
			}
			// Without code, /code holds only boxer-init.
			if !hasMount(s, oci.CodeDir, dirs.Code, "ro") {
				t.Errorf("no read-only %s for boxer-init: %+v", oci.CodeDir, s.Mounts)
			}
		}},
		{"runsc", norm(contract.Request{Lang: "bash", Runtime: "runsc", Pids: 10}), dirs, false, func(t *testing.T, s *specs.Spec) {
			if got := *s.Linux.Resources.Pids.Limit; got != RunscPidsPerTask*(10+1)+RunscPidsOverhead {
				t.Errorf("host pids %d, want room for boxer-init and gVisor's threads", got)
			}
			if rl := rlimit(s, "RLIMIT_NPROC"); rl == nil || rl.Hard != 10+1 {
				t.Errorf("RLIMIT_NPROC %+v, want 10 and boxer-init", rl)
			}
		}},
		{"custom seccomp", norm(contract.Request{Lang: "bash", Seccomp: custom}), dirs, false, func(t *testing.T, s *specs.Spec) {
			if s.Linux.Seccomp != custom {
				t.Error("the request's profile is not the spec's")
			}
		}},
		{"egress", norm(contract.Request{Lang: "python", AllowHosts: []string{"pypi.org"}, Env: []string{"HTTPS_PROXY=mine"}}), netDirs, false, func(t *testing.T, s *specs.Spec) {
			var netns string
			for _, ns := range s.Linux.Namespaces {
				if ns.Type == specs.NetworkNamespace {
					netns = ns.Path
				}
			}
			if netns != netDirs.Net.Netns {
				t.Errorf("network namespace %q, want the link's", netns)
			}
			mounts := map[string]specs.Mount{}
			for _, m := range s.Mounts {
				mounts[m.Destination] = m
			}
			if m := mounts["/etc/resolv.conf"]; m.Source != netDirs.Net.ResolvConf || !slices.Contains(m.Options, "ro") {
				t.Errorf("resolv.conf mount %+v", m)
			}
			if m := mounts[contract.PackagesDir]; m.Type != "tmpfs" || !slices.Contains(m.Options, "uid=65534") {
				t.Errorf("packages mount %+v", m)
			}
			// The link's variables, then the preset's NetEnv; the request's own win.
			for _, kv := range []string{"HTTP_PROXY=http://10.201.0.1:3128", "HTTPS_PROXY=mine", "PIP_TARGET=" + contract.PackagesDir} {
				if !slices.Contains(s.Process.Env, kv) {
					t.Errorf("env %q lacks %s", s.Process.Env, kv)
				}
			}
		}},
		{"egress, own image", norm(contract.Request{Lang: "python", Image: "other/python", AllowHosts: []string{"pypi.org"}}), netDirs, false, func(t *testing.T, s *specs.Spec) {
			for _, m := range s.Mounts {
				if m.Destination == contract.PackagesDir {
					t.Error("a packages mount in an image that may not hold its mount point")
				}
			}
		}},
		{"user namespace", norm(contract.Request{Lang: "python"}), usernsDirs, false, func(t *testing.T, s *specs.Spec) {
			want := specs.LinuxNamespace{Type: specs.UserNamespace, Path: usernsDirs.Userns.Path}
			if !slices.Contains(s.Linux.Namespaces, want) {
				t.Errorf("namespaces %+v, want %+v among them", s.Linux.Namespaces, want)
			}
			m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 31, Size: 65536}}
			if !slices.Equal(s.Linux.UIDMappings, m) || !slices.Equal(s.Linux.GIDMappings, m) {
				t.Errorf("maps %+v %+v, want %+v", s.Linux.UIDMappings, s.Linux.GIDMappings, m)
			}
			// runc's wrapper sets them (see runcUsernsWrapper).
			if len(s.Process.Rlimits) != 0 {
				t.Errorf("rlimits %+v, want none", s.Process.Rlimits)
			}
			if u := s.Process.User; u.UID != contract.DefaultUID || u.GID != contract.DefaultGID {
				t.Errorf("user %d:%d, want the ids inside", u.UID, u.GID)
			}
		}},
		{"session", norm(contract.Request{Lang: "bash"}), sessionDirs, false, func(t *testing.T, s *specs.Spec) {
			// /tmp and /home are the host's, bound in; HOME is the image's
			// unless the request sets its own.
			binds := map[string]string{}
			for _, m := range s.Mounts {
				if m.Type == "bind" {
					binds[m.Destination] = m.Source
				}
				if m.Destination == "/tmp" && m.Type != "bind" {
					t.Errorf("/tmp is a %s", m.Type)
				}
			}
			if binds["/tmp"] != sessionDirs.Tmp || binds["/home"] != sessionDirs.Home {
				t.Errorf("binds %v", binds)
			}
			if !slices.Contains(s.Process.Env, "HOME=/home/user") || slices.Contains(s.Process.Env, "HOME=/") {
				t.Errorf("env %q, want HOME=/home/user", s.Process.Env)
			}
		}},
		{"session, its own HOME", norm(contract.Request{Lang: "bash", Env: []string{"HOME=/workspace"}}), sessionDirs, false, func(t *testing.T, s *specs.Spec) {
			if !slices.Contains(s.Process.Env, "HOME=/workspace") || slices.Contains(s.Process.Env, "HOME=/home/user") {
				t.Errorf("env %q, want the request's HOME", s.Process.Env)
			}
		}},
		{"gated", norm(contract.Request{Lang: "python"}), dirs, true, func(t *testing.T, s *specs.Spec) {
			if want := []string{oci.InitPath, "-g", "--", "python3", "-u", "/code/main.py"}; !slices.Equal(s.Process.Args, want) {
				t.Errorf("args %q, want %q", s.Process.Args, want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := BuildSpec("bx-1", tc.req, []string{"PATH=/usr/bin", "HOME=/"}, host, tc.dirs, tc.gate)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Root.Readonly || !s.Process.NoNewPrivileges || s.Process.Cwd != oci.Workspace {
				t.Errorf("hardened base lost: root ro %v, no_new_privs %v, cwd %q", s.Root.Readonly, s.Process.NoNewPrivileges, s.Process.Cwd)
			}
			tc.check(t, s)
		})
	}
}

func hasMount(s *specs.Spec, dst, src, opt string) bool {
	for _, m := range s.Mounts {
		if m.Destination == dst && m.Source == src && slices.Contains(m.Options, opt) {
			return true
		}
	}
	return false
}

func rlimit(s *specs.Spec, typ string) *specs.POSIXRlimit {
	for i, r := range s.Process.Rlimits {
		if r.Type == typ {
			return &s.Process.Rlimits[i]
		}
	}
	return nil
}

// TestLinkInit: boxer-init goes into the code directory at the name the
// spec runs; without boxer-init there is no sandbox, and the error says
// how to get it.
func TestLinkInit(t *testing.T) {
	init := filepath.Join(t.TempDir(), "boxer-init")
	if err := os.WriteFile(init, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code := t.TempDir()
	if err := LinkInit(init, code); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(code, path.Base(oci.InitPath)))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("boxer-init in the code directory: %v %v", fi, err)
	}
	if err := LinkInit("", t.TempDir()); err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Errorf("error %v, want one that says to run make deps", err)
	}
}

// TestPresetsAreCopies: what Presets and LookupPreset return cannot change
// what a sandbox runs.
func TestPresetsAreCopies(t *testing.T) {
	p, err := contract.LookupPreset("python")
	if err != nil {
		t.Fatal(err)
	}
	p.Command[0], p.Env[0], p.Image = "sh", "X=1", "evil"
	ps := contract.Presets()
	ps[0].Command[0] = "sh"
	again, _ := contract.LookupPreset("python")
	if again.Command[0] != "python3" || again.Env[0] != "PYTHONDONTWRITEBYTECODE=1" || again.Image != "boxer/python" {
		t.Errorf("preset changed through a copy: %+v", again)
	}
	first, _ := contract.LookupPreset(ps[0].Name)
	if first.Command[0] == "sh" {
		t.Error("Presets handed out the preset itself")
	}
	for _, p := range contract.Presets() {
		if p.Example == "" {
			t.Errorf("preset %s has no example", p.Name)
		}
	}
}
