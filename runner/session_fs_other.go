//go:build !linux

package runner

// A session's files off Linux: every operation fails.

import (
	"context"
	"io"

	"github.com/boxer-dev/boxer/runner/contract"
)

// ReadSessionPath fails off Linux.
func (r *Runner) ReadSessionPath(context.Context, string, string, string, int64) ([]byte, error) {
	return nil, ErrNotLinux
}

// WriteSessionPath fails off Linux.
func (r *Runner) WriteSessionPath(context.Context, string, string, string, io.Reader) (contract.FileEntry, error) {
	return contract.FileEntry{}, ErrNotLinux
}

// SetSessionMetadata fails off Linux.
func (r *Runner) SetSessionMetadata(context.Context, string, string, string, map[string]string) (contract.FileEntry, error) {
	return contract.FileEntry{}, ErrNotLinux
}

// StatSessionPath fails off Linux.
func (r *Runner) StatSessionPath(context.Context, string, string, string) (contract.FileEntry, error) {
	return contract.FileEntry{}, ErrNotLinux
}

// ListSessionDir fails off Linux.
func (r *Runner) ListSessionDir(context.Context, string, string, string, int) ([]contract.FileEntry, error) {
	return nil, ErrNotLinux
}

// MakeSessionDir fails off Linux.
func (r *Runner) MakeSessionDir(context.Context, string, string, string) (contract.FileEntry, bool, error) {
	return contract.FileEntry{}, false, ErrNotLinux
}

// MoveSessionPath fails off Linux.
func (r *Runner) MoveSessionPath(context.Context, string, string, string, string) (contract.FileEntry, error) {
	return contract.FileEntry{}, ErrNotLinux
}

// RemoveSessionPath fails off Linux.
func (r *Runner) RemoveSessionPath(context.Context, string, string, string) error { return ErrNotLinux }

// WatchSessionDir fails off Linux.
func (r *Runner) WatchSessionDir(context.Context, string, string, string, bool) (*contract.SessionWatch, error) {
	return nil, ErrNotLinux
}
