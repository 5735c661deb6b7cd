//go:build !linux

package runner

// A session's files off Linux: every operation fails.

import (
	"context"
	"io"
)

// ReadSessionPath fails off Linux.
func (r *Runner) ReadSessionPath(context.Context, string, string, string, int64) ([]byte, error) {
	return nil, ErrNotLinux
}

// WriteSessionPath fails off Linux.
func (r *Runner) WriteSessionPath(context.Context, string, string, string, io.Reader) (FileEntry, error) {
	return FileEntry{}, ErrNotLinux
}

// StatSessionPath fails off Linux.
func (r *Runner) StatSessionPath(context.Context, string, string, string) (FileEntry, error) {
	return FileEntry{}, ErrNotLinux
}

// ListSessionDir fails off Linux.
func (r *Runner) ListSessionDir(context.Context, string, string, string, int) ([]FileEntry, error) {
	return nil, ErrNotLinux
}

// MakeSessionDir fails off Linux.
func (r *Runner) MakeSessionDir(context.Context, string, string, string) (FileEntry, bool, error) {
	return FileEntry{}, false, ErrNotLinux
}

// MoveSessionPath fails off Linux.
func (r *Runner) MoveSessionPath(context.Context, string, string, string, string) (FileEntry, error) {
	return FileEntry{}, ErrNotLinux
}

// RemoveSessionPath fails off Linux.
func (r *Runner) RemoveSessionPath(context.Context, string, string, string) error { return ErrNotLinux }

// WatchSessionDir fails off Linux.
func (r *Runner) WatchSessionDir(context.Context, string, string, string, bool) (*SessionWatch, error) {
	return nil, ErrNotLinux
}
