//go:build !linux

package runner

// Ready sessions off Linux: there are none.

import (
	"context"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
)

// StartReadySessions fails off Linux.
func (r *Runner) StartReadySessions(context.Context, []string, int, time.Duration, contract.Maxima, contract.SessionMaxima) error {
	return ErrNotLinux
}

// ReadySessions is 0 off Linux.
func (r *Runner) ReadySessions() int { return 0 }

// ReadyClaims is 0 off Linux.
func (r *Runner) ReadyClaims() int64 { return 0 }
