package boxer_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageDirection keeps imports pointing one way: cmd → server →
// runner → oci, snapshots, seccomp, cgroups, daemon, reaper (→ cgroups). Nothing below runner
// imports runner, nothing below server imports server, and no library
// package imports cmd.
func TestPackageDirection(t *testing.T) {
	const mod = "github.com/boxer-dev/boxer/"
	forbidden := map[string][]string{
		"oci":       {"runner", "cmd", "server", "snapshots", "daemon", "reaper"},
		"seccomp":   {"runner", "cmd", "server", "oci", "snapshots", "cgroups", "daemon", "reaper"},
		"cgroups":   {"runner", "cmd", "server", "oci", "snapshots", "seccomp", "daemon", "reaper"},
		"snapshots": {"runner", "cmd", "server", "oci", "seccomp", "cgroups", "daemon", "reaper"},
		"daemon":    {"runner", "cmd", "server", "oci", "seccomp", "cgroups", "snapshots", "reaper"},
		"reaper":    {"runner", "cmd", "server", "oci", "seccomp", "snapshots", "daemon"},
		"runner":    {"cmd", "server"},
		"server":    {"cmd"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, b := range bad {
			for _, d := range deps {
				if d == mod+b || strings.HasPrefix(d, mod+b+"/") {
					t.Errorf("%s imports %s", pkg, d)
				}
			}
		}
	}
}
