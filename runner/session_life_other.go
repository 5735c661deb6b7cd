//go:build !linux

package runner

// A session's life off Linux: pausing, resuming, checkpoints, its time left and figures need Linux.

import (
	"context"
	"time"
)

// PauseSession needs Linux.
func (r *Runner) PauseSession(context.Context, string, string) (Session, error) {
	return Session{}, ErrNotLinux
}

// ResumeSession needs Linux.
func (r *Runner) ResumeSession(context.Context, string, string) (Session, error) {
	return Session{}, ErrNotLinux
}

// SetSessionTimeout needs Linux.
func (r *Runner) SetSessionTimeout(context.Context, string, string, time.Duration, SessionMaxima) (Session, error) {
	return Session{}, ErrNotLinux
}

// SessionStats needs Linux.
func (r *Runner) SessionStats(context.Context, string, string) (SessionStats, error) {
	return SessionStats{}, ErrNotLinux
}

// CheckpointSession needs Linux.
func (r *Runner) CheckpointSession(context.Context, string, string) (Session, error) {
	return Session{}, ErrNotLinux
}

// ForkSession needs Linux.
func (r *Runner) ForkSession(context.Context, string, string, int, bool, SessionMaxima) ([]Session, error) {
	return nil, ErrNotLinux
}
