package runner

import (
	"context"
	"os"
	"path/filepath"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/log"
)

// reap removes sandboxes whose boxer process is gone (killed with SIGKILL,
// or its machine lost power): their containers, tasks and run directories.
func (r *Runner) reap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	containers, err := r.client.Containers(ctx, `labels."`+LabelSandbox+`"==true`)
	if err != nil {
		log.G(ctx).WithError(err).Debug("listing sandboxes to reap")
		return
	}
	var halfMade []string
	for _, c := range containers {
		labels, err := c.Labels(ctx)
		if err != nil || ownerAlive(labels[LabelOwner]) {
			continue
		}
		created := taskCreated(ctx, c)
		if err := destroy(ctx, c); err != nil {
			log.G(ctx).WithError(err).Warnf("reaping sandbox %s", c.ID())
			continue
		}
		_ = removeRunDir(filepath.Join(r.runsDir, c.ID()))
		if !created {
			halfMade = append(halfMade, c.ID())
		}
	}
	// Only a sandbox whose task was not fully made when its boxer died can
	// have parts containerd lost (see sweep).
	if len(halfMade) > 0 {
		r.sweep(ctx, halfMade)
	}
	// Run directories of runs that died before their container existed.
	entries, _ := os.ReadDir(r.runsDir)
	for _, e := range entries {
		dir := filepath.Join(r.runsDir, e.Name())
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		var age time.Duration
		if info, serr := e.Info(); serr == nil {
			age = time.Since(info.ModTime())
		}
		switch runDirVerdict(owner, err, age) {
		case removeDir:
			_ = removeRunDir(dir)
		case removeUnlessContainer:
			if _, err := r.client.LoadContainer(ctx, e.Name()); err != nil {
				_ = removeRunDir(dir)
			}
		}
	}
}

// taskCreated says whether c's task was fully made: it has run, or runs.
// No task, or one still in the created state (or whose state containerd
// cannot tell), may be a creation its boxer's death cut short.
func taskCreated(ctx context.Context, c containerd.Container) bool {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return false
	}
	st, err := task.Status(ctx)
	return err == nil && (st.Status == containerd.Running || st.Status == containerd.Stopped || st.Status == containerd.Paused)
}

// dirVerdict is what the reaper does with a run directory.
type dirVerdict int

const (
	keepDir dirVerdict = iota
	removeDir
	removeUnlessContainer
)

// runDirVerdict decides for a run directory from its owner file (contents,
// read error) and its age. A run writes its owner right after creating the
// directory, atomically (an older boxer wrote it in place): a directory
// without an owner, or with an empty one, is another run's being made,
// unless it is old. One whose owner is dead goes, unless its container
// exists (then the container's reaping removes both).
func runDirVerdict(owner []byte, readErr error, age time.Duration) dirVerdict {
	switch {
	case readErr != nil || len(owner) == 0:
		if age > time.Minute {
			return removeDir
		}
		return keepDir
	case ownerAlive(string(owner)):
		return keepDir
	}
	return removeUnlessContainer
}
