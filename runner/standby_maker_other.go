//go:build !linux

package runner

import (
	"context"
	"github.com/boxer-dev/boxer/runner/contract"
	"os"
	"time"
)

// StandbyMakerLock has no lock off Linux: no run leaves a standby.
func (r *Runner) StandbyMakerLock(context.Context, contract.Request) *os.File { return nil }

// WaitStandby fails off Linux.
func (r *Runner) WaitStandby(context.Context, string, time.Time) (bool, error) {
	return false, ErrNotLinux
}
