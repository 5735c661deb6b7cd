//go:build !linux

package runner

import (
	"context"
	"errors"

	containerd "github.com/containerd/containerd/v2/client"
)

// Sandboxes need Linux (namespaces, cgroups, seccomp): elsewhere the
// package builds, so that its request, result and preset types can be
// used, but New says why it cannot run anything.

// ErrNotLinux is New's answer off Linux.
var ErrNotLinux = errors.New("boxer sandboxes need Linux")

// Runner runs sandboxes on one containerd; off Linux there is none.
type Runner struct{}

// New fails off Linux.
func New(context.Context, Options) (*Runner, error) { return nil, ErrNotLinux }

// Client is nil off Linux.
func (r *Runner) Client() *containerd.Client { return nil }

// Close does nothing off Linux.
func (r *Runner) Close() error { return nil }

// Run fails off Linux.
func (r *Runner) Run(context.Context, Request) (Result, error) {
	return Result{Status: StatusError, ExitCode: ExitBoxer, Error: ErrNotLinux.Error()}, ErrNotLinux
}

// StartPool fails off Linux.
func (r *Runner) StartPool(context.Context, []string, int, Maxima) error { return ErrNotLinux }

// WarmRuns is 0 off Linux.
func (r *Runner) WarmRuns() int64 { return 0 }

// Health reports not OK off Linux.
func (r *Runner) Health(context.Context) Health {
	return Health{Containerd: ErrNotLinux.Error(), Images: map[string]bool{}}
}
