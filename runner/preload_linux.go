package runner

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

// preloads says whether the sandbox is a preloaded one.
func (sb *sandbox) preloads() bool {
	return sb.gate && sb.session == nil && !sb.anchor && len(sb.req.Secrets) == 0 && len(sb.req.PreloadModules()) > 0
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
func (sb *sandbox) waitPreloaded(ctx context.Context) error {
	marker := filepath.Join(sb.dirs.Workspace, preloadMarker)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(preloadWait)
	for n := 0; ; n++ {
		if _, err := os.Stat(marker); err == nil {
			return nil
		}
		if n%20 == 19 {
			st, err := sb.task.Status(context.WithoutCancel(ctx))
			if err != nil || st.Status != containerd.Running {
				return fmt.Errorf("preloading sandbox %s: its interpreter is %s (%v)", sb.id, st.Status, err)
			}
		}
		if time.Now().After(deadline) {
			log.G(ctx).Warnf("sandbox %s: its preload took more than %s; its program will wait for the rest", sb.id, preloadWait)
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
func (sb *sandbox) removePreloadMarker() error {
	if err := os.Remove(filepath.Join(sb.dirs.Workspace, preloadMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("preparing the workspace: %w", err)
	}
	return nil
}

// cpuSoFar is the CPU time the sandbox has used until now: a preloaded
// sandbox's imports, which its run's figure leaves out.
func (sb *sandbox) cpuSoFar() uint64 {
	stats, err := cgroups.ReadStats(sb.r.Cgroups, reaper.CgroupsPath(sb.r.Namespace, sb.id))
	if err != nil {
		return 0
	}
	return stats.CPUTimeNs
}
