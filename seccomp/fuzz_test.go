package seccomp

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzLoad loads arbitrary files as seccomp profiles: Load refuses with a
// *ProfileError naming the file, or returns a profile with a default
// action, rules and architectures, the same each time.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"}]}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":1,"architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86"],
		  "syscalls":[{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
		  {"names":["read"],"action":"SCMP_ACT_ALLOW"},
		  {"names":["mount"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_SYS_ADMIN"]}},
		  {"names":["arch_prctl"],"action":"SCMP_ACT_ALLOW","includes":{"arches":["amd64"]}},
		  {"names":["s390_pci_mmio_read"],"action":"SCMP_ACT_ALLOW","includes":{"arches":["s390x"]}},
		  {"names":["ptrace"],"action":"SCMP_ACT_ALLOW","excludes":{"arches":["amd64","arm64"]}}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW"}`,
		`{"defaultAction":"","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["mount"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_SYS_ADMIN"]}}]}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":-1,"syscalls":[]}`,
		`{"syscalls":[{"names":"read"}]}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":-1}]}]}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "profile.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path)
		if err != nil {
			var pe *ProfileError
			if !errors.As(err, &pe) || pe.Path != path || pe.Err == nil {
				t.Fatalf("Load = %v (%T), want a *ProfileError on %s", err, err, path)
			}
			return
		}
		if p.DefaultAction == "" || len(p.Syscalls) == 0 || len(p.Architectures) == 0 {
			t.Fatalf("Load returned a profile with nothing to apply: %+v", p)
		}
		again, err := Load(path)
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("loading twice: %+v, %v; first %+v", again, err, p)
		}
	})
}
