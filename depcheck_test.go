package boxer_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPackageDirection keeps imports pointing one way: cmd → server →
// runner → oci, snapshots, seccomp, cgroups, daemon, egress, secrets, reaper (→ cgroups);
// server and e2b → audit (→ egress); e2b → e2b/interp. Nothing below runner
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
		"egress":    {"runner", "cmd", "server", "oci", "seccomp", "cgroups", "snapshots", "daemon", "reaper", "secrets"},
		"secrets":   {"runner", "cmd", "server", "oci", "seccomp", "cgroups", "snapshots", "daemon", "reaper", "egress"},
		"userns":    {"runner", "cmd", "server", "oci", "seccomp", "cgroups", "snapshots", "daemon", "reaper", "egress", "secrets"},
		"runner":    {"cmd", "server", "e2b"},
		// contract is data: nothing that makes sandboxes (the daemon,
		// user namespaces, seccomp profiles); TestRunnerLayers keeps it
		// below the rest of runner.
		"runner/contract": {"cmd", "server", "e2b", "fleet", "audit", "daemon", "userns", "seccomp"},
		"runner/sandbox":  {"cmd", "server", "e2b", "fleet", "audit"},
		// warm and session are siblings over sandbox: neither imports
		// the other (ready sessions ask warm through an interface).
		"runner/warm":    {"cmd", "server", "e2b", "fleet", "audit", "runner/session"},
		"runner/session": {"cmd", "server", "e2b", "fleet", "audit", "runner/warm"},
		// sessionfs reaches a session's files by its run directory: it
		// knows nothing of sessions, their keepers or warm sandboxes.
		"runner/sessionfs": {"cmd", "server", "e2b", "fleet", "audit", "runner/warm", "runner/keeper", "runner/session"},
		"server":           {"cmd", "e2b"},
		"e2b":              {"cmd", "server"},
		// interp, the code interpreter, is a protocol beside e2b's on
		// runner: e2b routes port 49999 to it and is its Host, and it
		// knows nothing of e2b's sandboxes, records or fleet.
		"e2b/interp": {"cmd", "server", "e2b", "fleet", "audit"},
		// templates is below e2b's handlers: it speaks no HTTP.
		"e2b/templates": {"cmd", "server", "e2b", "fleet", "audit"},
		"fleet":         {"cmd", "server", "e2b", "runner"},
		"imagebuild":    {"cmd", "server", "e2b", "fleet", "audit"},
		"audit":         {"cmd", "server", "e2b", "runner", "oci", "seccomp", "cgroups", "snapshots", "daemon", "reaper", "secrets", "userns", "fleet"},
		// keeper, below session, asks it through an interface of its
		// own (keeper.Sessions), and knows nothing of warm sandboxes.
		"runner/keeper": {"cmd", "server", "e2b", "fleet", "audit", "runner/warm", "runner/session"},
		// The image commands are in the CLI build (boxer_cli), which has
		// no server.
		"cmd/boxer/imagecmd": {"server", "e2b", "fleet", "audit"},
		// procwire speaks to boxer-procd (init/boxer-procd.c): the lowest
		// layer, it imports nothing of boxer's.
		"procwire": {"cmd", "server", "e2b", "runner", "oci", "seccomp", "cgroups", "snapshots", "daemon", "reaper", "egress", "secrets", "userns", "fleet", "audit", "internal"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, b := range bad {
			for _, d := range deps {
				if d == mod+pkg || strings.HasPrefix(d, mod+pkg+"/") {
					continue // itself, or a package of its own
				}
				if d == mod+b || strings.HasPrefix(d, mod+b+"/") {
					t.Errorf("%s imports %s", pkg, d)
				}
			}
		}
	}
}

// TestRunnerLayers keeps runner's packages in layers, each importing only
// the ones below it: contract (data), sandbox (what one sandbox is made
// of), sessionfs (a session's files, by its run directory), warm (sandboxes made ahead, shared shims), keeper (a live
// session's keeper, its client and wire) and session (sessions), then
// runner itself (docs/internals.md, "Packages of runner").
func TestRunnerLayers(t *testing.T) {
	const mod = "github.com/boxer-dev/boxer/"
	layers := []string{"runner/contract", "runner/sandbox", "runner/sessionfs", "runner/warm", "runner/keeper", "runner/session", "runner"}
	for i, pkg := range layers {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, above := range layers[i+1:] {
			if slices.Contains(deps, mod+above) {
				t.Errorf("%s imports %s, a layer above it", pkg, above)
			}
		}
		for _, d := range deps {
			if strings.HasPrefix(d, mod+"runner/") && !slices.Contains(layers, strings.TrimPrefix(d, mod)) {
				t.Errorf("%s imports %s, a package of runner in no layer: add it to the layers", pkg, d)
			}
		}
	}
}

// TestNonLinuxBuild keeps the packages a library user imports through runner
// building elsewhere than Linux, where their Linux-only calls answer that
// boxer needs Linux. Vet type-checks the tests too, and with them the
// api_test.go files that pin each non-Linux body to its Linux signature.
func TestNonLinuxBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles containerd's client for darwin: slow on a cold build cache")
	}
	pkgs := []string{"./oci/", "./seccomp/", "./cgroups/", "./snapshots/", "./daemon/", "./reaper/", "./egress/", "./secrets/", "./userns/", "./imagebuild/", "./runner/...", "./server/", "./e2b/...", "./fleet/", "./audit/", "./procwire/"}
	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	cmd.Env = append(cmd.Environ(), "GOOS=darwin", "GOARCH=arm64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("GOOS=darwin go vet %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
}
