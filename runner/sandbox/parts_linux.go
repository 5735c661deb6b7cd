package sandbox

// What the layers above add to a sandbox they make, and the runtime's
// failures they are told.

import (
	"context"
	"errors"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxer-dev/boxer/runner/contract"
)

// Parts are what every layer above adds to a sandbox it makes: its
// spec's first process and labels, and its task's streams. A layer that
// adds more gives Parts that are SessionParts or WarmParts as well. The
// sandbox asks them while it is made and started, never while it is
// destroyed: the layer that made it undoes its own parts around Destroy.
type Parts interface {
	// Shape makes spec and labels the layer's (a session's first process
	// and labels, an anchor's or a standby's labels).
	Shape(sb *Sandbox, spec *specs.Spec, labels map[string]string) error
	// Streams creates the task's IO when it is not a run's streams (a
	// session's wire or none, an anchor's none, a standby's FIFOs); nil:
	// a run's.
	Streams(sb *Sandbox) cio.Creator
}

// SessionParts are what a session adds to its sandbox besides: its files,
// its network namespace and netstack, its CA's lifetime, its restore.
type SessionParts interface {
	Parts
	// Files mounts a workspace of the layer's own for a sandbox user of
	// host ids uid:gid (a session's files tmpfs) and says so; false: the
	// sandbox gets a run's workspace.
	Files(sb *Sandbox, uid, gid uint32) (own bool, err error)
	// Loopback gives a sandbox without a link a network namespace of the
	// layer's (a gVisor session's, for its netstack), or does nothing.
	Loopback(sb *Sandbox) error
	// CAUntil is when the CA of the sandbox's injected headers expires;
	// zero: egress.NewCA's default.
	CAUntil() time.Time
	// Netstack says that a gVisor sandbox without a link has its
	// netstack all the same (a session's, whose ports are forwarded).
	Netstack() bool
	// Restore are the task options of a sandbox restored from a
	// checkpoint (a fork), nil for any other.
	Restore() []containerd.NewTaskOpts
}

// WarmParts are what a sandbox made ahead of its run, or sharing a shim,
// adds besides: detached streams, and the shared shim it joins.
type WarmParts interface {
	Parts
	// Detached says that no one in this process holds the task's
	// streams once it is made (a standby's: the run that claims it does).
	Detached() bool
	// JoinShim is the ID of the sandbox whose shared shim serves this
	// one too, "" for a shim of its own.
	JoinShim(ctx context.Context) string
	// ShimDied says, once a task could not be made, whether the shared
	// shim it joined died (then it is made once more, after LeaveShim
	// and JoinShim).
	ShimDied(ctx context.Context) bool
	// LeaveShim leaves the shared shim JoinShim gave.
	LeaveShim()
	// ShimLost waits a little to learn whether the shared shim died,
	// which is then why its task failed.
	ShimLost() bool
}

// NoParts are a plain run's parts: nothing added. They are
// SessionParts and WarmParts, each adding nothing.
type NoParts struct{}

// Files gives the sandbox a run's workspace.
func (NoParts) Files(*Sandbox, uint32, uint32) (bool, error) { return false, nil }

// Loopback does nothing: the runtime makes the network namespace.
func (NoParts) Loopback(*Sandbox) error { return nil }

// CAUntil is egress.NewCA's default.
func (NoParts) CAUntil() time.Time { return time.Time{} }

// Shape adds nothing.
func (NoParts) Shape(*Sandbox, *specs.Spec, map[string]string) error { return nil }

// Netstack is off.
func (NoParts) Netstack() bool { return false }

// Streams are a run's.
func (NoParts) Streams(*Sandbox) cio.Creator { return nil }

// Restore is none.
func (NoParts) Restore() []containerd.NewTaskOpts { return nil }

// Detached is false.
func (NoParts) Detached() bool { return false }

// JoinShim gives a shim of its own.
func (NoParts) JoinShim(context.Context) string { return "" }

// ShimDied is false.
func (NoParts) ShimDied(context.Context) bool { return false }

// LeaveShim does nothing.
func (NoParts) LeaveShim() {}

// ShimLost is false.
func (NoParts) ShimLost() bool { return false }

// parts are the sandbox's Parts, NoParts when none.
func (sb *Sandbox) parts() Parts {
	if sb.Parts == nil {
		return NoParts{}
	}
	return sb.Parts
}

// session are the sandbox's SessionParts, NoParts when its Parts have
// none.
func (sb *Sandbox) session() SessionParts {
	if p, ok := sb.Parts.(SessionParts); ok {
		return p
	}
	return NoParts{}
}

// warm are the sandbox's WarmParts, NoParts when its Parts have none.
func (sb *Sandbox) warm() WarmParts {
	if p, ok := sb.Parts.(WarmParts); ok {
		return p
	}
	return NoParts{}
}

// RuntimeError is the runtime's failure to create or start a sandbox, as
// containerd reports it: the only errors a run's end reads as the
// runtime's failure to execute its command (contract.ExecFailure).
type RuntimeError struct {
	Step string
	Err  error
}

func (e *RuntimeError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *RuntimeError) Unwrap() error { return e.Err }

// StartFailed is the result of a run whose program never started: the
// runtime's 126 or 127 when it could not execute the command, else boxer's
// failure (125).
func StartFailed(res contract.Result, err error) (contract.Result, error) {
	var rt *RuntimeError
	if errors.As(err, &rt) {
		if code, detail, ok := contract.ExecFailure(rt.Error()); ok {
			res.ExitCode, res.Error = code, detail
			return res, nil
		}
	}
	return res, err
}
