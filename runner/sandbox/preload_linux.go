package sandbox

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/log"
)

// A preloaded sandbox is a pre-created one (warm, or a standby) whose
// interpreter has imported its request's Preload modules before the
// program is known (docs/reference.md, "Preloaded interpreters"). Its
// command is the plain one, python3 -u /code/main.py, and boxer-init has
// no gate: the hook below, which Python imports as sitecustomize while it
// starts, imports the modules and is the gate itself. Waiting on stdin
// rather than on the code file appearing: the line is the gate that
// pre-created sandboxes already use, it needs nothing of the runtime's
// file system (gVisor's gofer caches what a sandbox has looked up), and
// boxer writes it only once the code and files are in place.

//go:embed preload_hook.py
var preloadHook string

const (
	// preloadMarker is the empty file the hook makes in the workspace
	// once its imports are done; boxer removes it before delivering.
	preloadMarker = ".boxer-preloaded"
	// preloadWait bounds the wait for the imports when the sandbox is
	// made: a sandbox whose hook says nothing by then is used all the
	// same, and its program waits for the rest of the imports.
	preloadWait = time.Minute
)

// preloads says whether the sandbox is a preloaded one: gated (a warm
// sandbox or a standby; a session's and a shared shim's never are),
// without secrets, for a request with Preload modules.
func (sb *Sandbox) preloads() bool {
	return sb.Gate && len(sb.Req.Secrets) == 0 && len(sb.Req.PreloadModules()) > 0
}

// writePreloadHook puts the hook and its module list in the code
// directory, read-only to the sandbox like the code.
func writePreloadHook(codeDir string, mods []string) error {
	dir := filepath.Join(codeDir, contract.PreloadDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("writing the preload hook: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(preloadHook), 0o644); err != nil {
		return fmt.Errorf("writing the preload hook: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules"), []byte(strings.Join(mods, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing the preload hook: %w", err)
	}
	return nil
}

// waitPreloaded waits until the hook has imported the modules, so that a
// sandbox counts as made only when it is ready; it fails when the
// interpreter ended instead.
func (sb *Sandbox) waitPreloaded(ctx context.Context) error {
	marker := filepath.Join(sb.Dirs.Workspace, preloadMarker)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(preloadWait)
	for n := 0; ; n++ {
		if _, err := os.Stat(marker); err == nil {
			return nil
		}
		if n%20 == 19 {
			st, err := sb.Task.Status(context.WithoutCancel(ctx))
			if err != nil || st.Status != containerd.Running {
				return fmt.Errorf("preloading sandbox %s: its interpreter is %s (%v)", sb.ID, st.Status, err)
			}
		}
		if time.Now().After(deadline) {
			log.G(ctx).Warnf("sandbox %s: its preload took more than %s; its program will wait for the rest", sb.ID, preloadWait)
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return contract.ErrInterrupted
		}
	}
}

// removePreloadMarker takes the hook's marker out of the workspace before
// the program's files go in: the program finds the workspace as a plain
// run does.
func (sb *Sandbox) removePreloadMarker() error {
	if err := os.Remove(filepath.Join(sb.Dirs.Workspace, preloadMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("preparing the workspace: %w", err)
	}
	return nil
}

// cpuSoFar is the CPU time the sandbox has used until now: a preloaded
// sandbox's imports, which its run's figure leaves out.
func (sb *Sandbox) cpuSoFar() uint64 {
	stats, err := cgroups.ReadStats(sb.h.Cgroups, reaper.CgroupsPath(sb.h.Namespace, sb.ID))
	if err != nil {
		return 0
	}
	return stats.CPUTimeNs
}
