//go:build !linux

package runner

import (
	"context"
	"os"
)

// StandbyMakerLock has no lock off Linux: no run leaves a standby.
func (r *Runner) StandbyMakerLock(context.Context, Request) *os.File { return nil }
