package snapshots

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickProfile: Debian 12's /etc/profile, made quick, sets the same
// PATH in bash and dash, and only dash runs id(1) for it.
func TestQuickProfile(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	debian, err := os.ReadFile("testdata/debian12-profile")
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(root, "etc", "profile")
	if err := os.WriteFile(profile, debian, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := quickProfile(root); err != nil {
		t.Fatal(err)
	}
	quick, _ := os.ReadFile(profile)
	if strings.Contains(string(quick), idCheck) || strings.Count(string(quick), idCheckQuick) != 2 {
		t.Fatalf("profile after: %s", quick)
	}
	// An id(1) that says it ran, first on the PATH the profile starts with.
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(root, "id-ran")
	if err := os.WriteFile(filepath.Join(bin, "id"), []byte("#!/bin/sh\necho >> "+ran+"\nexec /usr/bin/id \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := func(shell string) string {
		cmd := exec.Command(shell, "-c", `. "$1"; echo "$PATH"`, shell, profile)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		return strings.TrimSpace(string(out))
	}
	inBash := path("bash")
	if _, err := os.Stat(ran); err == nil {
		t.Error("bash ran id(1) for the profile")
	}
	if inDash := path("dash"); inDash != inBash || !strings.Contains(inBash, "/usr/bin") {
		t.Errorf("PATH: %q in bash, %q in dash", inBash, inDash)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Error("dash did not run id(1): the fixture does not test the fallback")
	}
	// A profile without Debian's check is left alone.
	if err := os.WriteFile(profile, []byte("PATH=/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := quickProfile(root); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(profile); string(got) != "PATH=/bin\n" {
		t.Errorf("another profile became %q", got)
	}
}
