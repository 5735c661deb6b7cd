package sandbox

// The end of a sandbox's output: read to its last byte before the task goes.

import (
	"context"
	"fmt"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/containerd/errdefs"
)

// DrainTimeout bounds the wait for a sandbox's output once its program
// has ended.
const DrainTimeout = 5 * time.Second

// drain waits until the output is complete: the shim has copied the last of
// it and closed the FIFOs, which it does once the process is gone. Only
// then may the task be deleted: containerd's Task.Delete cancels the
// client's copy from the FIFOs (pkg/cio's cancel closes them), and what was
// not read yet would be lost. A shim that never closes them (it died) is
// given DrainTimeout.
func (sb *Sandbox) drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		sb.Task.IO().Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(DrainTimeout):
	}
	dctx, cancel := context.WithTimeout(ctx, reaper.CleanupTimeout)
	defer cancel()
	// The process has exited: no kill first (runsc would say it cannot).
	if _, err := sb.Task.Delete(dctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting task: %w", err)
	}
	return nil
}
