package runner

// A sandbox as the layers above package sandbox make it: a run's, a warm
// one's, a standby's, a shared shim's or a session's, and its teardown
// down the layers once.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// sandbox is a box.Sandbox with what the layers above it made of it; it
// is its Sandbox's Parts.
type sandbox struct {
	*box.Sandbox
	r *Runner
	// pooled: taken from the pool; torn down after its result is answered.
	pooled bool
	// handOff: its run is over and the sandbox goes to the process that
	// makes the next standby, which removes it (Options.HandOff).
	handOff bool
	// session: the sandbox is a session's, which lives across calls.
	session *sessionMeta
	// anchor: the sandbox only holds a shim that others share (anchorOf,
	// when this process made it); member is the anchor whose shim serves
	// this one, nil for a shim of its own (see shims_linux.go).
	anchor   bool
	anchorOf *anchor
	member   *anchor
	// standby: the labels of a CLI's standby (see standby_linux.go).
	standby map[string]string
}

// newSandbox returns a sandbox for a normalized request, in state new.
func (r *Runner) newSandbox(id string, req contract.Request, gate bool) *sandbox {
	sb := &sandbox{Sandbox: r.NewSandbox(id, req, gate), r: r}
	sb.Parts = sb
	return sb
}

// destroy tears sb down, each layer once, top down: sessions release a
// session's own link and checkpoint, the sandbox goes (Sandbox.Destroy),
// then warm removes an anchor's sandbox record or gives a member's shared
// shim back. Idempotent, as Sandbox.Destroy.
func (sb *sandbox) destroy(ctx context.Context) error {
	return sb.r.destroy(ctx, sb, sb.session != nil)
}

// destroy is sb's teardown (sandbox.destroy); session says that sb is a
// session's, or a leftover whose labels or ID say so.
func (r *Runner) destroy(ctx context.Context, sb *sandbox, session bool) error {
	if sb.State() == box.StateDestroyed {
		return nil
	}
	var errs []error
	if session {
		errs = append(errs, r.releaseSession(sb.ID, sb.RunDir, sb.Link != nil))
	}
	errs = append(errs, sb.Sandbox.Destroy(ctx))
	if sb.anchor {
		errs = append(errs, r.removeAnchorRecord(ctx, sb.ID))
	}
	if sb.member != nil {
		// After its container: the anchor may go now.
		r.leaveShim(sb.member)
		sb.member = nil
	}
	return errors.Join(errs...)
}

// destroyLeftover removes a sandbox container found on containerd (the
// reaper's, a standby's, a session's end): the same teardown as any
// sandbox's, through the layers its labels (or a session's ID) name.
func (r *Runner) destroyLeftover(ctx context.Context, c containerd.Container) error {
	sb := r.newSandbox(c.ID(), contract.Request{}, false)
	sb.Take(c, box.StateCreated)
	session := validSessionID(c.ID())
	if labels, err := c.Labels(ctx); err == nil {
		sb.anchor = labels[reaper.LabelAnchor] == "true"
		_, labelled := labels[reaper.LabelSession]
		session = session || labelled
	}
	return r.destroy(ctx, sb, session)
}

// removeAnchorRecord removes an anchor's sandbox record (see
// shims_linux.go), once its container is gone.
func (r *Runner) removeAnchorRecord(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reaper.CleanupTimeout)
	defer cancel()
	if err := r.Containerd.SandboxStore().Delete(cctx, id); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsNotImplemented(err) {
		return fmt.Errorf("removing sandbox record %s: %w", id, err)
	}
	return nil
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

// Shape makes the spec and labels a session's, an anchor's or a
// standby's.
func (sb *sandbox) Shape(_ *box.Sandbox, spec *specs.Spec, labels map[string]string) error {
	if sb.session != nil {
		if err := sb.session.shape(spec, sb.Req, sb.Dirs.SecretEnv, labels); err != nil {
			return err
		}
	}
	if sb.anchor {
		labels[reaper.LabelAnchor] = "true"
	}
	maps.Copy(labels, sb.standby)
	return nil
}

// Netstack: a session's runsc has its netstack, so that its ports can be
// forwarded (session_port_linux.go).
func (sb *sandbox) Netstack() bool { return sb.session != nil }

// Streams: a session's first process is its interpreter on the wire, or
// only keeps it alive (as an anchor's); a standby's are the FIFOs of the
// run that claims it.
func (sb *sandbox) Streams(*box.Sandbox) cio.Creator {
	if sb.session != nil && driverFirst(sb.Req) {
		// Its first process is its interpreter, on the wire.
		return wireCreator(sb.RunDir)
	}
	if sb.session != nil || sb.anchor {
		// Its first process only keeps it alive: a session's calls
		// bring their own streams.
		return cio.NullIO
	}
	if sb.standby != nil {
		// The run that claims it brings its streams.
		return fifosOnly(sb.RunDir)
	}
	return nil
}

// Restore are a fork's task options (restoreOpts).
func (sb *sandbox) Restore() []containerd.NewTaskOpts { return sb.restoreOpts() }

// Detached: a standby's streams are the claiming run's (see fifosOnly).
func (sb *sandbox) Detached() bool { return sb.standby != nil }

// JoinShim gives a run's or a pre-created sandbox on runc an anchor whose
// shim serves it too, when shims are shared. Sessions live too long
// (their shim could not be recycled), and gVisor's sandboxes each need
// their own.
func (sb *sandbox) JoinShim(ctx context.Context) string {
	if sb.r.shims == nil || sb.anchor || sb.session != nil || sb.Req.Runtime != "runc" {
		return ""
	}
	if sb.member = sb.r.joinShim(ctx); sb.member == nil {
		return ""
	}
	return sb.member.id
}

// ShimDied says whether sb's shared shim died (Runner.shimDied).
func (sb *sandbox) ShimDied(ctx context.Context) bool { return sb.r.shimDied(ctx, sb) }

// LeaveShim leaves sb's shared shim.
func (sb *sandbox) LeaveShim() {
	if sb.member != nil {
		sb.r.leaveShim(sb.member)
		sb.member = nil
	}
}

// ShimLost waits to learn whether sb's shared shim died (memberLost).
func (sb *sandbox) ShimLost() bool { return sb.memberLost() }
