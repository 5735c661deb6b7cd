package runner

// The Runner's warm sandboxes: package warm's, forwarded.

import (
	"context"
	"os"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
)

// StartPool keeps size pre-created sandboxes for each entry of langs
// until Close (warm.Warm.StartPool).
func (r *Runner) StartPool(ctx context.Context, langs []string, size int, max contract.Maxima) error {
	return r.warm.StartPool(ctx, langs, size, max)
}

// WarmRuns counts the runs that took a pre-created sandbox.
func (r *Runner) WarmRuns() int64 { return r.warm.WarmRuns() }

// SharedShimRuns counts the sandboxes that shared a shim with others.
func (r *Runner) SharedShimRuns() int64 { return r.warm.SharedShimRuns() }

// MakeStandby makes a standby of req's shape that expires after idle
// (warm.Warm.MakeStandby).
func (r *Runner) MakeStandby(ctx context.Context, req contract.Request, idle time.Duration) (id string, until time.Time, err error) {
	return r.warm.MakeStandby(ctx, req, idle)
}

// ExpireStandby removes standby id, unless a run claimed it first.
func (r *Runner) ExpireStandby(ctx context.Context, id string) error {
	return r.warm.ExpireStandby(ctx, id)
}

// WaitStandby waits while standby id is this process's, until its expiry
// or ctx's end (warm.Warm.WaitStandby); it may be called after Close.
func (r *Runner) WaitStandby(ctx context.Context, id string, until time.Time) (claimed bool, err error) {
	return r.warm.WaitStandby(ctx, id, until)
}

// StandbyMakerLock returns the maker lock of req's shape, taken, when a
// run of that shape should leave a standby (warm.Warm.StandbyMakerLock).
func (r *Runner) StandbyMakerLock(ctx context.Context, req contract.Request) *os.File {
	return r.warm.StandbyMakerLock(ctx, req)
}
