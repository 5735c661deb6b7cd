package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/userns"
)

// TestSandboxStates: steps go one way, a step out of turn is a typed
// error, and Destroy works from any state, twice too. A prepared sandbox
// is a run directory and a mounted workspace on the host (needs root), and
// Destroy takes both away, asking nothing of the layers above.
func TestSandboxStates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a workspace needs root")
	}
	init := filepath.Join(t.TempDir(), "boxer-init")
	if err := os.WriteFile(init, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	leases := t.TempDir()
	h := &Host{RunsDir: t.TempDir(), Namespace: "boxer-unit", Cgroups: cgroups.DetectMode(), Facts: HostFacts{Init: init},
		Userns: UsernsSetup{Opts: userns.Options{Dir: leases, Range: userns.Range{Start: 3 << 30, Count: userns.Size}}}}
	t.Cleanup(func() {
		if held, _ := filepath.Glob(filepath.Join(leases, "[0-9]*")); len(held) > 0 {
			t.Errorf("user id blocks left leased: %v", held)
		}
	})
	req, err := contract.Request{Lang: "python"}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// From new: nothing to remove.
	sb := h.NewSandbox("bx-new", req, false)
	var se *stateError
	if err := sb.Start(ctx, nil); !errors.As(err, &se) || se.from != StateNew || se.to != StateRunning {
		t.Errorf("start from new = %v, want a stateError new → running", err)
	}
	for range 2 {
		if err := sb.Destroy(ctx); err != nil || sb.state != StateDestroyed {
			t.Errorf("destroy from new: %v, state %s", err, sb.state)
		}
	}

	// From prepared: the run directory, its owner and the workspace go.
	sb = h.NewSandbox("bx-prepared", req, false)
	if err := sb.Prepare(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Prepare(); !errors.As(err, &se) {
		t.Errorf("preparing twice = %v, want a stateError", err)
	}
	if err := sb.Deliver(req.Delivery()); !errors.As(err, &se) {
		t.Errorf("deliver before create = %v, want a stateError", err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(mounts), " "+sb.Dirs.Workspace+" ") {
		t.Fatalf("workspace %s not mounted", sb.Dirs.Workspace)
	}
	for _, p := range []string{filepath.Join(sb.RunDir, "owner"), sb.Dirs.Code} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("prepared sandbox lacks %s: %v", p, err)
		}
	}
	// Destroy asks nothing of the layers above: any call of its Parts
	// panics.
	sb.Parts = unaskedParts{}
	for range 2 {
		if err := sb.Destroy(ctx); err != nil {
			t.Errorf("destroy from prepared: %v", err)
		}
	}
	mounts, _ = os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), sb.RunDir) {
		t.Errorf("workspace still mounted after destroy")
	}
	if _, err := os.Stat(sb.RunDir); !os.IsNotExist(err) {
		t.Errorf("run directory still there after destroy: %v", err)
	}
	if err := sb.Prepare(); !errors.As(err, &se) || se.from != StateDestroyed {
		t.Errorf("prepare after destroy = %v, want a stateError from destroyed", err)
	}
}

// unaskedParts are Parts, SessionParts and WarmParts none of whose
// methods may be called: each call panics on the nil interface inside.
type unaskedParts struct{ allParts }

// allParts are every part a layer may add.
type allParts interface {
	SessionParts
	WarmParts
}
