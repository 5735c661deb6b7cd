package session

// A session's sandbox as sessions make it, its Parts, and its teardown.

import (
	"context"
	"errors"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// sandbox is a box.Sandbox as sessions make it; it is its Sandbox's
// Parts, SessionParts. A session never shares a shim (it would outlive
// the shim's recycling): it has no WarmParts.
type sandbox struct {
	*box.Sandbox
	r *Layer
	// session: the sandbox is a session's, which lives across calls.
	session *sessionMeta
}

var _ box.SessionParts = (*sandbox)(nil)

// newSandbox returns a session's sandbox for a normalized request, in
// state new.
func (r *Layer) newSandbox(id string, req contract.Request, gate bool) *sandbox {
	sb := &sandbox{Sandbox: r.NewSandbox(id, req, gate), r: r}
	sb.Parts = sb
	return sb
}

// destroy tears sb down, each layer once, top down: sessions release a
// session's own link and checkpoint, then the sandbox goes
// (Sandbox.Destroy). Idempotent, as Sandbox.Destroy.
func (sb *sandbox) destroy(ctx context.Context) error {
	return sb.r.destroy(ctx, sb, sb.session != nil)
}

// destroy is sb's teardown (sandbox.destroy); session says that sb is a
// session's, or a leftover whose labels or ID say so.
func (r *Layer) destroy(ctx context.Context, sb *sandbox, session bool) error {
	if sb.State() == box.StateDestroyed {
		return nil
	}
	var errs []error
	if session {
		errs = append(errs, r.releaseSession(sb.ID, sb.RunDir, sb.Link != nil))
	}
	errs = append(errs, sb.Sandbox.Destroy(ctx))
	return errors.Join(errs...)
}

// IsSession says whether the container id, with labels (nil: none
// could be read), is a session's: its label, or a session's ID, says so.
func IsSession(id string, labels map[string]string) bool {
	_, labelled := labels[reaper.LabelSession]
	return validSessionID(id) || labelled
}

// DestroyLeftover removes a session's container found on containerd (the
// reaper's, a session's end): the same teardown as any session's.
func (r *Layer) DestroyLeftover(ctx context.Context, c containerd.Container) error {
	sb := r.newSandbox(c.ID(), contract.Request{}, false)
	sb.Take(c, box.StateCreated)
	return r.destroy(ctx, sb, true)
}

// Files mounts a session's files tmpfs in place of a run's workspace.
func (sb *sandbox) Files(_ *box.Sandbox, uid, gid uint32) (bool, error) {
	if sb.session == nil {
		return false, nil
	}
	return true, sb.mountSessionFiles(uid, gid)
}

// Loopback gives a gVisor session its network namespace (makeLoopback).
func (sb *sandbox) Loopback(*box.Sandbox) error { return sb.makeLoopback() }

// CAUntil: a session's CA lives as long as the session may.
func (sb *sandbox) CAUntil() time.Time {
	if sb.session == nil {
		return time.Time{}
	}
	return sb.session.backstop.Add(time.Hour)
}

// Shape makes the spec and labels a session's.
func (sb *sandbox) Shape(_ *box.Sandbox, spec *specs.Spec, labels map[string]string) error {
	if sb.session != nil {
		if err := sb.session.shape(spec, sb.Req, sb.Dirs.SecretEnv, labels); err != nil {
			return err
		}
	}
	return nil
}

// Netstack: a session's runsc has its netstack, so that its ports can be
// forwarded (session_port_linux.go).
func (sb *sandbox) Netstack() bool { return sb.session != nil }

// Streams: a session's first process is its interpreter on the wire, or
// only keeps it alive.
func (sb *sandbox) Streams(*box.Sandbox) cio.Creator {
	if sb.session != nil && sb.session.first {
		// Its first process is its interpreter, on the wire.
		return keeper.WireCreator(sb.RunDir)
	}
	if sb.session != nil && sb.session.served {
		// Its first process is its process server.
		return keeper.ServerCreator(sb.RunDir)
	}
	if sb.session != nil {
		// Its first process only keeps it alive: a session's calls
		// bring their own streams.
		return cio.NullIO
	}
	return nil
}

// Restore are a fork's task options (restoreOpts).
func (sb *sandbox) Restore() []containerd.NewTaskOpts { return sb.restoreOpts() }
