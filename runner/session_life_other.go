//go:build !linux

package runner

// A session's life off Linux: pausing, resuming, checkpoints, its time left and figures need Linux.

import (
	"context"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
)

// PauseSession needs Linux.
func (r *Runner) PauseSession(context.Context, string, string) (contract.Session, error) {
	return contract.Session{}, ErrNotLinux
}

// ResumeSession needs Linux.
func (r *Runner) ResumeSession(context.Context, string, string) (contract.Session, error) {
	return contract.Session{}, ErrNotLinux
}

// SetSessionTimeout needs Linux.
func (r *Runner) SetSessionTimeout(context.Context, string, string, time.Duration, contract.SessionMaxima) (contract.Session, error) {
	return contract.Session{}, ErrNotLinux
}

// SessionStats needs Linux.
func (r *Runner) SessionStats(context.Context, string, string) (contract.SessionStats, error) {
	return contract.SessionStats{}, ErrNotLinux
}

// CheckpointSession needs Linux.
func (r *Runner) CheckpointSession(context.Context, string, string) (contract.Session, error) {
	return contract.Session{}, ErrNotLinux
}

// ForkSession needs Linux.
func (r *Runner) ForkSession(context.Context, string, string, int, bool, contract.SessionMaxima) ([]contract.Session, error) {
	return nil, ErrNotLinux
}

// SaveSnapshot needs Linux.
func (r *Runner) SaveSnapshot(context.Context, string, string, string, []byte) (int64, error) {
	return 0, ErrNotLinux
}

// Snapshots needs Linux.
func (r *Runner) Snapshots(string) ([]contract.Kept, error) { return nil, ErrNotLinux }

// RemoveSnapshot needs Linux.
func (r *Runner) RemoveSnapshot(string, string) error { return ErrNotLinux }

// SessionFromSnapshot needs Linux.
func (r *Runner) SessionFromSnapshot(context.Context, string, string, bool, time.Duration, contract.SessionMaxima) (contract.Session, error) {
	return contract.Session{}, ErrNotLinux
}
