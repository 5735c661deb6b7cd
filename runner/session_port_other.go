//go:build !linux

package runner

// A session's ports, off Linux: none.

import (
	"context"
	"net"
)

// DialPort fails off Linux.
func (r *Runner) DialPort(context.Context, string, string, int) (net.Conn, error) {
	return nil, ErrNotLinux
}

// CheckSession fails off Linux.
func (r *Runner) CheckSession(context.Context, string, string) error { return ErrNotLinux }
