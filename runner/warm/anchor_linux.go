package warm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
	sandboxes "github.com/containerd/containerd/v2/core/sandbox"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// shimDeathWait bounds how long a run whose task's wait failed waits to
// learn whether its shared shim died (its anchor's wait fails at the same
// moment, from the same closed connection).
const shimDeathWait = time.Second

// anchorRequest is an anchor's sandbox: its program only waits, in the
// smallest limits a sandbox can start in, with every hardening of a run
// (read-only root, no capabilities, seccomp, an unprivileged user, no
// network).
func anchorRequest(image string) (contract.Request, error) {
	return contract.Request{
		Image:       image,
		Args:        []string{"sleep", "infinity"},
		MemoryBytes: 16 << 20,
		CPUs:        0.5,
		Pids:        4,
		TmpBytes:    64 << 10,
		OutputLimit: 1,
	}.Normalize()
}

func newAnchorID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "bx-shim-" + hex.EncodeToString(b)
}

// joinShim gives a sandbox about to be created an anchor whose shim will
// serve it too, or nil: a shim of its own (shared shims are off, none
// could be made, or ctx ended while one was being made). The sandbox's
// destroy leaves it.
func (w *Warm) joinShim(ctx context.Context) *anchor {
	if w.shims == nil {
		return nil
	}
	a, mk := w.shims.pick()
	for _, m := range mk {
		w.cleanups.Add(1)
		go func() {
			defer w.cleanups.Done()
			w.makeAnchor(context.WithoutCancel(ctx), m)
		}()
	}
	if a == nil {
		return nil
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		w.leaveShim(a)
		return nil
	}
	if a.err != nil {
		w.leaveShim(a)
		return nil
	}
	return a
}

// leaveShim is a member's goodbye to its anchor, which goes when it was
// the last of a retired one.
func (w *Warm) leaveShim(a *anchor) {
	if !w.shims.leave(a) {
		return
	}
	w.cleanups.Add(1)
	go func() {
		defer w.cleanups.Done()
		w.removeAnchor(a)
	}()
}

// makeAnchor makes a and watches it. Failing, sandboxes run with shims of
// their own for a while: for good when containerd has no sandbox store.
func (w *Warm) makeAnchor(ctx context.Context, a *anchor) {
	err := w.startAnchor(ctx, a)
	off := errdefs.IsNotImplemented(err)
	if err != nil {
		l := log.G(ctx).WithError(err)
		if w.shimWarned.CompareAndSwap(false, true) && !off {
			l.Warn("sandboxes run with shims of their own: a shared shim could not be made")
		} else {
			l.Debug("making a shared shim")
		}
	}
	if w.shims.made(a, err, off) {
		w.removeAnchor(a)
	}
	if err == nil {
		go w.watchAnchor(a)
		// containerd answers again: what it could not remove before goes.
		w.removeLostAnchors(ctx)
	}
}

// startAnchor makes a's sandbox record, then its sandbox, and starts it:
// the one shim start its members share.
func (w *Warm) startAnchor(ctx context.Context, a *anchor) error {
	rootfs, err := w.anchorRootfs(ctx)
	if err != nil {
		return err
	}
	req, err := anchorRequest(rootfs.Image)
	if err != nil {
		return err
	}
	sb := w.NewSandbox(a.id, req, false)
	sb.anchor, sb.anchorOf = true, a
	a.sb = sb
	// Only the record's existence matters to containerd: it never calls
	// a sandbox controller for it (the runc shim has no sandbox API).
	// Labelled like a sandbox, for the reaper.
	rec := sandboxes.Sandbox{
		ID:      a.id,
		Labels:  map[string]string{reaper.LabelSandbox: "true", reaper.LabelOwner: w.Owner, reaper.LabelAnchor: "true"},
		Runtime: sandboxes.RuntimeOpts{Name: w.Shim},
	}
	if _, err := w.Containerd.SandboxStore().Create(ctx, rec); err != nil {
		return fmt.Errorf("recording shared shim %s: %w", a.id, err)
	}
	if err := sb.Make(ctx, rootfs); err != nil {
		return err
	}
	if err := sb.To(box.StateRunning, box.StateCreated); err != nil {
		return err
	}
	if err := sb.Task.Start(ctx); err != nil {
		return &box.RuntimeError{Step: "starting shared shim", Err: err}
	}
	return nil
}

// anchorRootfs is the root of an anchor: the first preset's image there is
// (any of them has sleep).
func (w *Warm) anchorRootfs(ctx context.Context) (snapshots.Rootfs, error) {
	for _, p := range contract.Presets() {
		rootfs, err := snapshots.Resolve(ctx, w.Containerd, p.Image)
		if err == nil {
			return rootfs, nil
		}
		if !errors.Is(err, snapshots.ErrImageNotFound) {
			return rootfs, err
		}
	}
	return snapshots.Rootfs{}, fmt.Errorf("no preset's image for a shared shim: run 'boxer setup'")
}

// watchAnchor waits for a's task to end. Removed on purpose, nothing more
// happens; ended on its own, its shim died (the anchor only waits): its
// members' runs end with an error, and a new anchor takes its slot.
func (w *Warm) watchAnchor(a *anchor) {
	st := <-a.sb.StatusC
	close(a.exited)
	if news, remove := w.shims.died(a); news {
		l := log.L.WithError(st.Error())
		if fault.ContainerdGone(st.Error()) {
			l.Debugf("shared shim %s: containerd stopped answering; a new one is made once it is back", a.id)
		} else {
			l.Warnf("shared shim %s died: the runs it served end with an error", a.id)
		}
		if remove {
			w.cleanups.Add(1)
			defer w.cleanups.Done()
			w.removeAnchor(a)
		}
	}
}

// shimDied says whether sb's shared shim died: its anchor has ended, or
// its task cannot be reached. The anchor is then retired.
func (w *Warm) shimDied(ctx context.Context, sb *Sandbox) bool {
	a := sb.member
	if a == nil {
		return false
	}
	select {
	case <-a.exited:
		return true
	default:
	}
	st, err := a.sb.Task.Status(ctx)
	if err == nil && st.Status == containerd.Running {
		return false
	}
	if _, remove := w.shims.died(a); remove {
		w.cleanups.Add(1)
		go func() {
			defer w.cleanups.Done()
			w.removeAnchor(a)
		}()
	}
	return true
}

// memberLost waits up to shimDeathWait to learn whether sb's shared shim
// died, which is then why its task cannot be waited on.
func (sb *Sandbox) memberLost() bool {
	if sb.member == nil {
		return false
	}
	select {
	case <-sb.member.exited:
		return true
	case <-time.After(shimDeathWait):
		return false
	}
}

// removeAnchor removes a's sandbox (task, container, record); its members
// are gone. A removal that fails (containerd is down) is tried again once
// a new anchor is made, and when Warm closes.
func (w *Warm) removeAnchor(a *anchor) {
	if a.sb == nil {
		return
	}
	if err := a.sb.Destroy(context.Background()); err != nil {
		log.L.WithError(err).Debugf("removing shared shim %s; tried again later", a.id)
		w.shims.lose(a.id)
	}
}

// removeLostAnchors removes the anchors whose removal failed, as leftovers
// of this process: their sandbox was marked destroyed by the first try.
// Each removal is bounded: containerd may be gone again.
func (w *Warm) removeLostAnchors(ctx context.Context) {
	for _, id := range w.shims.takeLost() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reaper.CleanupTimeout)
		err := w.removeAnchorByID(cctx, id)
		cancel()
		if err != nil {
			log.G(ctx).WithError(err).Debugf("removing shared shim %s; tried again later", id)
			w.shims.lose(id)
		}
	}
}

// removeAnchorByID removes an anchor's container (with its task and
// cgroup) and its sandbox record, whichever are left.
func (w *Warm) removeAnchorByID(ctx context.Context, id string) error {
	var errs []error
	c, err := w.Containerd.LoadContainer(ctx, id)
	switch {
	case err == nil:
		errs = append(errs, w.destroyLeftover(ctx, c))
	case !errdefs.IsNotFound(err):
		errs = append(errs, err)
	}
	if err := w.Containerd.SandboxStore().Delete(ctx, id); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsNotImplemented(err) {
		errs = append(errs, fmt.Errorf("removing sandbox record %s: %w", id, err))
	}
	return errors.Join(errs...)
}

// closeShims removes the anchors, once their members are gone, and those
// whose removal failed before: Close calls it after the runs and the pool.
func (w *Warm) closeShims() {
	if w.shims == nil {
		return
	}
	for _, a := range w.shims.close() {
		w.removeAnchor(a)
	}
	w.removeLostAnchors(context.Background())
}

// SharedShimRuns counts the sandboxes that shared a shim with others.
func (w *Warm) SharedShimRuns() int64 {
	if w.shims == nil {
		return 0
	}
	return w.shims.sharedRuns()
}
