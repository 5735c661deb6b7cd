package runner

import (
	"context"
	"os"
	"path/filepath"
	"time"

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
	for _, c := range containers {
		labels, err := c.Labels(ctx)
		if err != nil || ownerAlive(labels[LabelOwner]) {
			continue
		}
		if err := destroy(ctx, c); err != nil {
			log.G(ctx).WithError(err).Warnf("reaping sandbox %s", c.ID())
			continue
		}
		_ = removeRunDir(filepath.Join(r.runsDir, c.ID()))
	}
	// Run directories of runs that died before their container existed.
	entries, _ := os.ReadDir(r.runsDir)
	for _, e := range entries {
		dir := filepath.Join(r.runsDir, e.Name())
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			// A run writes its owner right after creating the directory.
			if info, serr := e.Info(); serr == nil && time.Since(info.ModTime()) > time.Minute {
				_ = removeRunDir(dir)
			}
			continue
		}
		if !ownerAlive(string(owner)) {
			if _, err := r.client.LoadContainer(ctx, e.Name()); err != nil {
				_ = removeRunDir(dir)
			}
		}
	}
}
