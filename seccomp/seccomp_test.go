package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// allowedDigest pins Allowed: adding or removing a syscall changes it, and
// the change must update this digest and SECURITY.md's table on purpose.
const allowedDigest = "d1ddeb29c799b0c346e39d69386ac3db31ed7f6819f26c765b46a4928dfea7c3"

func TestAllowedPinned(t *testing.T) {
	sum := sha256.Sum256([]byte(strings.Join(Allowed, "\n")))
	if got := hex.EncodeToString(sum[:]); got != allowedDigest {
		t.Errorf("the allowlist changed (digest %s): review the change, then update allowedDigest", got)
	}
}

func TestAllowedSortedAndUnique(t *testing.T) {
	// Alphabetised as moby's list is, with or without underscores.
	key := func(s string) string { return strings.ReplaceAll(s, "_", "") }
	for i := 1; i < len(Allowed); i++ {
		if Allowed[i-1] == Allowed[i] {
			t.Errorf("%s listed twice", Allowed[i])
		}
		if key(Allowed[i-1]) > key(Allowed[i]) && Allowed[i-1] > Allowed[i] {
			t.Errorf("%s before %s: keep the list alphabetised", Allowed[i-1], Allowed[i])
		}
	}
}

func TestDefaultDeny(t *testing.T) {
	p := DefaultProfile()
	if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != uint(unix.EPERM) {
		t.Fatalf("default action %s errno %v, want SCMP_ACT_ERRNO with EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	for _, r := range p.Syscalls {
		if r.Action == specs.ActAllow && len(r.Args) == 0 {
			for _, n := range r.Names {
				if slices.Contains(Denied, n) || slices.Contains(Refused, n) {
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
			if slices.Contains(Denied, n) {
				t.Errorf("%s is in Denied but allowed by a rule", n)
			}
		}
	}
	for _, n := range []string{"ptrace", "mount", "unshare", "setns", "bpf", "keyctl", "add_key", "perf_event_open", "userfaultfd", "io_uring_setup", "open_by_handle_at", "kexec_load", "init_module"} {
		if slices.Contains(Allowed, n) {
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

func TestLoadDockerProfileDropsCapabilityRules(t *testing.T) {
	profile := `{
  "defaultAction": "SCMP_ACT_ERRNO",
  "syscalls": [
    {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
    {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["s390_pci_mmio_read"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["s390x"]}}
  ]
}`
	f := filepath.Join(t.TempDir(), "docker.json")
	if err := os.WriteFile(f, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Syscalls) != 1 || !slices.Equal(p.Syscalls[0].Names, []string{"read", "write"}) {
		t.Errorf("rules = %+v, want only read, write", p.Syscalls)
	}
	if len(p.Architectures) == 0 {
		t.Error("no architectures set")
	}
}

func TestLoadRefusesEmpty(t *testing.T) {
	f := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(f, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f); err == nil {
		t.Error("an empty profile was accepted")
	}
}
