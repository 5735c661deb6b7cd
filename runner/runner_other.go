//go:build !linux

package runner

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner/contract"
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
func (r *Runner) Run(context.Context, contract.Request) (contract.Result, error) {
	return contract.Result{Status: contract.StatusError, ExitCode: contract.ExitBoxer, Error: ErrNotLinux.Error()}, ErrNotLinux
}

// MakeStandby fails off Linux.
func (r *Runner) MakeStandby(context.Context, contract.Request, time.Duration) (string, time.Time, error) {
	return "", time.Time{}, ErrNotLinux
}

// StandbyMakerLock has no lock off Linux: no run leaves a standby.
func (r *Runner) StandbyMakerLock(context.Context, contract.Request) *os.File { return nil }

// WaitStandby fails off Linux.
func (r *Runner) WaitStandby(context.Context, string, time.Time) (bool, error) {
	return false, ErrNotLinux
}

// ExpireStandby fails off Linux.
func (r *Runner) ExpireStandby(context.Context, string) error { return ErrNotLinux }

// StartPool fails off Linux.
func (r *Runner) StartPool(context.Context, []string, int, contract.Maxima) error { return ErrNotLinux }

// WarmRuns is 0 off Linux.
func (r *Runner) WarmRuns() int64 { return 0 }

// Health reports not OK off Linux.
func (r *Runner) Health(context.Context) contract.Health {
	return contract.Health{Containerd: ErrNotLinux.Error(), Images: map[string]bool{}}
}

// CreateSession fails off Linux.
func (r *Runner) CreateSession(context.Context, contract.SessionRequest, contract.Maxima, contract.SessionMaxima) (contract.Session, error) {
	return contract.Session{}, ErrNotLinux
}

// RunInSession fails off Linux.
func (r *Runner) RunInSession(context.Context, string, string, contract.SessionCall, contract.Maxima) (contract.Result, error) {
	return contract.Result{Status: contract.StatusError, ExitCode: contract.ExitBoxer, Error: ErrNotLinux.Error()}, ErrNotLinux
}

// Sessions fails off Linux.
func (r *Runner) Sessions(context.Context, string) ([]contract.Session, error) {
	return nil, ErrNotLinux
}

// RemoveSession fails off Linux.
func (r *Runner) RemoveSession(context.Context, string, string) error { return ErrNotLinux }

// EndedNetwork is nil off Linux.
func (r *Runner) EndedNetwork(string) *egress.Report { return nil }

// ExpireSessions does nothing off Linux.
func (r *Runner) ExpireSessions(context.Context) []contract.EndedSession { return nil }

// CloseSessions does nothing off Linux.
func (r *Runner) CloseSessions(context.Context, string, string) []contract.EndedSession { return nil }

// HandOverSessions does nothing off Linux.
func (r *Runner) HandOverSessions(context.Context, string) ([]contract.EndedSession, []string) {
	return nil, nil
}

// ReadSessionFile fails off Linux.
func (r *Runner) ReadSessionFile(context.Context, string, string, string, int64) ([]byte, error) {
	return nil, ErrNotLinux
}

// WriteSessionFile fails off Linux.
func (r *Runner) WriteSessionFile(context.Context, string, string, string, []byte) error {
	return ErrNotLinux
}

// CopyToSession fails off Linux.
func (r *Runner) CopyToSession(context.Context, string, string, string) error { return ErrNotLinux }

// CopyFromSession fails off Linux.
func (r *Runner) CopyFromSession(context.Context, string, string, string) ([]contract.File, int, error) {
	return nil, 0, ErrNotLinux
}

// SharedShimRuns is 0 off Linux.
func (r *Runner) SharedShimRuns() int64 { return 0 }

// TakeHandedOff has nothing off Linux.
func (r *Runner) TakeHandedOff() (owner string, ids []string) { return "", nil }

// RemoveSandboxes does nothing off Linux.
func (r *Runner) RemoveSandboxes(ctx context.Context, owner string, ids []string) {}

// HandTo does nothing off Linux.
func (r *Runner) HandTo(owner string, ids []string) {}

// Keep fails off Linux.
func (r *Runner) Keep(context.Context, string) error { return ErrNotLinux }

// StartProcess fails off Linux.
func (r *Runner) StartProcess(context.Context, string, string, contract.ProcessRequest) (contract.ProcessInfo, error) {
	return contract.ProcessInfo{}, ErrNotLinux
}

// Processes fails off Linux.
func (r *Runner) Processes(context.Context, string, string) ([]contract.ProcessInfo, error) {
	return nil, ErrNotLinux
}

// SignalProcess fails off Linux.
func (r *Runner) SignalProcess(context.Context, string, string, string, syscall.Signal) error {
	return ErrNotLinux
}

// SendStdin fails off Linux.
func (r *Runner) SendStdin(context.Context, string, string, string, io.Reader, bool) error {
	return ErrNotLinux
}

// ResizeProcess fails off Linux.
func (r *Runner) ResizeProcess(context.Context, string, string, string, contract.TermSize) error {
	return ErrNotLinux
}

// AttachProcess fails off Linux.
func (r *Runner) AttachProcess(context.Context, string, string, string, int64, func(contract.ProcessEvent) error) error {
	return ErrNotLinux
}

// RunProcess fails off Linux.
func (r *Runner) RunProcess(context.Context, string, string, contract.ProcessRequest, func(contract.ProcessEvent) error) error {
	return ErrNotLinux
}

// SessionNetwork fails off Linux.
func (r *Runner) SessionNetwork(context.Context, string, string) (egress.Report, error) {
	return egress.Report{}, ErrNotLinux
}

// SetSessionAllow fails off Linux.
func (r *Runner) SetSessionAllow(context.Context, string, string, []string, contract.Maxima) (egress.Report, error) {
	return egress.Report{}, ErrNotLinux
}

// HoldStream holds nothing off Linux.
func (r *Runner) HoldStream(string) (func(), error) { return func() {}, nil }

// AdoptSessions takes over nothing off Linux.
func (r *Runner) AdoptSessions(context.Context, string) []string { return nil }
