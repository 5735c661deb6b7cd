package runner

// A leftover's teardown, down the layer that made it, once.

import (
	"context"

	"github.com/boxer-dev/boxer/runner/session"
	containerd "github.com/containerd/containerd/v2/client"
)

// destroyLeftover removes a sandbox container found on containerd (the
// reaper's, a handed-off run's): the same teardown as any sandbox's,
// through the layer its labels (or a session's ID) name: a session's
// through sessions, any other through warm.
func (r *Runner) destroyLeftover(ctx context.Context, c containerd.Container) error {
	labels, err := c.Labels(ctx)
	if err != nil {
		labels = nil
	}
	if session.IsSession(c.ID(), labels) {
		return r.Layer.DestroyLeftover(ctx, c)
	}
	return r.warm.DestroyLeftover(ctx, c, labels)
}
