package seccomp

import (
	"encoding/json"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestDefaultDeny(t *testing.T) {
	p := DefaultProfile()
	if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != uint(unix.EPERM) {
		t.Fatalf("default action %s errno %v, want SCMP_ACT_ERRNO with EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	for _, r := range p.Syscalls {
		if r.Action == specs.ActAllow && len(r.Args) == 0 {
			for _, n := range r.Names {
				if slices.Contains(Denied(), n) || slices.ContainsFunc(Refused(), func(r Refusal) bool { return r.Name == n }) {
					t.Errorf("%s is allowed unconditionally but must be refused", n)
				}
			}
		}
	}
}

func TestDeniedNeverAllowed(t *testing.T) {
	p := DefaultProfile()
	for _, r := range p.Syscalls {
		if r.Action != specs.ActAllow {
			continue
		}
		for _, n := range r.Names {
			if slices.Contains(Denied(), n) {
				t.Errorf("%s is in Denied but allowed by a rule", n)
			}
		}
	}
	for _, n := range []string{"ptrace", "mount", "unshare", "setns", "bpf", "keyctl", "add_key", "perf_event_open", "userfaultfd", "io_uring_setup", "open_by_handle_at", "kexec_load", "init_module"} {
		if slices.Contains(Allowed(), n) {
			t.Errorf("%s must not be allowed", n)
		}
	}
}

func TestCloneRefusesNamespaces(t *testing.T) {
	p := DefaultProfile()
	for _, r := range p.Syscalls {
		if !slices.Contains(r.Names, "clone") {
			continue
		}
		if len(r.Args) != 1 || r.Args[0].Op != specs.OpMaskedEqual || r.Args[0].Value&unix.CLONE_NEWUSER == 0 || r.Args[0].ValueTwo != 0 {
			t.Errorf("clone rule %+v must allow clone only without namespace flags", r)
		}
		return
	}
	t.Error("no clone rule")
}

// TestDefaultProfileFresh checks that a caller changing the profile it got
// (the way a custom rule would be added) leaves the next profile untouched.
func TestDefaultProfileFresh(t *testing.T) {
	// Compared as JSON: a profile sharing memory with an earlier one would
	// compare equal to it as a value.
	want, err := json.Marshal(DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultProfile()
	*p.DefaultErrnoRet = 0
	p.DefaultAction = specs.ActAllow
	p.Architectures[0] = specs.ArchX86
	p.Syscalls[0].Names[0] = "ptrace"
	p.Syscalls[0].Names = append(p.Syscalls[0].Names, "mount")
	for i := range p.Syscalls {
		for j := range p.Syscalls[i].Args {
			p.Syscalls[i].Args[j].Value = 0
		}
		if p.Syscalls[i].ErrnoRet != nil {
			*p.Syscalls[i].ErrnoRet = 0
		}
	}
	p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"bpf"}, Action: specs.ActAllow})
	got, err := json.Marshal(DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("DefaultProfile() after a caller changed an earlier one:\n%s\nwant\n%s", got, want)
	}
	if slices.Contains(Allowed(), "ptrace") {
		t.Error("changing the profile changed Allowed()")
	}
}
