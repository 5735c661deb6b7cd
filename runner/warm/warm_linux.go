package warm

// The warm layer over a Host, and a sandbox as it makes one.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Warm keeps a Host's warm sandboxes: the pool, the standbys and the
// shared shims.
type Warm struct {
	*box.Host
	// cleanups are the background teardowns its Runner's Close waits for.
	cleanups *sync.WaitGroup
	// useStandby: runs claim standbys (runner's Options.Standby).
	useStandby bool
	pool       *pool
	// shims are the shared shims of runc sandboxes; nil: a shim each.
	shims      *shimSet
	shimWarned atomic.Bool
}

// New returns the warm layer over h: runs claim standbys when standby
// says so, and runc sandboxes share sharedShims shims (0: a shim each),
// each serving shimRuns sandboxes. Its background work joins cleanups.
func New(h *box.Host, cleanups *sync.WaitGroup, standby bool, sharedShims, shimRuns int) *Warm {
	w := &Warm{Host: h, cleanups: cleanups, useStandby: standby}
	if sharedShims > 0 {
		w.shims = newShimSet(sharedShims, shimRuns, newAnchorID)
	}
	return w
}

// Close removes the pre-created sandboxes, waits for the teardowns, then
// removes the shared shims and waits again: the Runner's Close calls it
// once the sessions are gone.
func (w *Warm) Close() {
	w.closePool()
	w.cleanups.Wait()
	w.closeShims()
	w.cleanups.Wait()
}

// Sandbox is a box.Sandbox as the warm layer makes it: a run's, a
// pre-created one, a standby or an anchor; it is its Sandbox's Parts,
// WarmParts.
type Sandbox struct {
	*box.Sandbox
	w *Warm
	// pooled: taken from the pool; torn down after its result is answered.
	pooled bool
	// anchor: the sandbox only holds a shim that others share (anchorOf,
	// when this process made it); member is the anchor whose shim serves
	// this one, nil for a shim of its own (see shims_linux.go).
	anchor   bool
	anchorOf *anchor
	member   *anchor
	// standby: the labels of a CLI's standby (see standby_linux.go).
	standby map[string]string
}

var _ box.WarmParts = (*Sandbox)(nil)

// NewSandbox returns a sandbox for a normalized request, in state new.
func (w *Warm) NewSandbox(id string, req contract.Request, gate bool) *Sandbox {
	sb := &Sandbox{Sandbox: w.Host.NewSandbox(id, req, gate), w: w}
	sb.Parts = sb
	return sb
}

// Pooled says that sb was taken from the pool.
func (sb *Sandbox) Pooled() bool { return sb.pooled }

// Destroy tears sb down, each layer once: the sandbox goes
// (Sandbox.Destroy), then warm removes an anchor's sandbox record or
// gives a member's shared shim back. Idempotent, as Sandbox.Destroy.
func (sb *Sandbox) Destroy(ctx context.Context) error {
	if sb.State() == box.StateDestroyed {
		return nil
	}
	errs := []error{sb.Sandbox.Destroy(ctx)}
	if sb.anchor {
		errs = append(errs, sb.w.removeAnchorRecord(ctx, sb.ID))
	}
	if sb.member != nil {
		// After its container: the anchor may go now.
		sb.w.leaveShim(sb.member)
		sb.member = nil
	}
	return errors.Join(errs...)
}

// Release tears a run's sandbox down: at once, or, for a pre-created
// one whose result can be answered first, in the background (Close waits
// for it).
func (w *Warm) Release(ctx context.Context, sb *Sandbox) error {
	if !sb.pooled {
		// An interrupted run says so, and what could not be removed.
		return sb.Destroy(ctx)
	}
	w.cleanups.Add(1)
	go func() {
		defer w.cleanups.Done()
		w.pool.teardown(ctx, sb)
	}()
	return nil
}

// DestroyLeftover removes a sandbox container found on containerd that
// is no session's (a run's, a standby's, an anchor's), as its labels
// (nil: none could be read) say: the same teardown as any warm sandbox's.
func (w *Warm) DestroyLeftover(ctx context.Context, c containerd.Container, labels map[string]string) error {
	sb := w.NewSandbox(c.ID(), contract.Request{}, false)
	sb.Take(c, box.StateCreated)
	sb.anchor = labels[reaper.LabelAnchor] == "true"
	return sb.Destroy(ctx)
}

// destroyLeftover is DestroyLeftover of c with the labels it has now.
func (w *Warm) destroyLeftover(ctx context.Context, c containerd.Container) error {
	labels, err := c.Labels(ctx)
	if err != nil {
		labels = nil
	}
	return w.DestroyLeftover(ctx, c, labels)
}

// removeAnchorRecord removes an anchor's sandbox record (see
// shims_linux.go), once its container is gone.
func (w *Warm) removeAnchorRecord(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reaper.CleanupTimeout)
	defer cancel()
	if err := w.Containerd.SandboxStore().Delete(cctx, id); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsNotImplemented(err) {
		return fmt.Errorf("removing sandbox record %s: %w", id, err)
	}
	return nil
}

// Shape labels an anchor's or a standby's spec.
func (sb *Sandbox) Shape(_ *box.Sandbox, _ *specs.Spec, labels map[string]string) error {
	if sb.anchor {
		labels[reaper.LabelAnchor] = "true"
	}
	maps.Copy(labels, sb.standby)
	return nil
}

// Streams: an anchor's first process only keeps it alive; a standby's
// are the FIFOs of the run that claims it.
func (sb *Sandbox) Streams(*box.Sandbox) cio.Creator {
	if sb.anchor {
		// Its first process only keeps it alive.
		return cio.NullIO
	}
	if sb.standby != nil {
		// The run that claims it brings its streams.
		return fifosOnly(sb.RunDir)
	}
	return nil
}

// Detached: a standby's streams are the claiming run's (see fifosOnly).
func (sb *Sandbox) Detached() bool { return sb.standby != nil }

// JoinShim gives a run's or a pre-created sandbox on runc an anchor whose
// shim serves it too, when shims are shared. Sessions live too long
// (their shim could not be recycled), and gVisor's sandboxes each need
// their own.
func (sb *Sandbox) JoinShim(ctx context.Context) string {
	if sb.w.shims == nil || sb.anchor || sb.Req.Runtime != "runc" {
		return ""
	}
	if sb.member = sb.w.joinShim(ctx); sb.member == nil {
		return ""
	}
	return sb.member.id
}

// ShimDied says whether sb's shared shim died (Warm.shimDied).
func (sb *Sandbox) ShimDied(ctx context.Context) bool { return sb.w.shimDied(ctx, sb) }

// LeaveShim leaves sb's shared shim.
func (sb *Sandbox) LeaveShim() {
	if sb.member != nil {
		sb.w.leaveShim(sb.member)
		sb.member = nil
	}
}

// ShimLost waits to learn whether sb's shared shim died (memberLost).
func (sb *Sandbox) ShimLost() bool { return sb.memberLost() }
