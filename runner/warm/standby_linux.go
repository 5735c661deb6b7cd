package warm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// A standby is the CLI's pre-created sandbox (docs/reference.md,
// "Standby sandboxes"): after a run, a detached boxer process makes one
// sandbox of the run's shape, gated like the server's pre-created ones,
// and the next run of that shape claims it instead of making its own.
// Nothing stays in memory between the two boxer processes: the standby is
// a labelled container, and its claim a containerd lease of a fixed ID,
// which containerd creates once (the loser of a race gets
// AlreadyExists). The process that made it sleeps until a run claims it
// (the run wakes it through the standby's wake FIFO: it then exits) or it
// expires (it then claims it like a run would and removes it); should that
// process die, the standby's owner is dead and the next boxer command
// reaps it.

// MakeStandby makes a standby of req's shape that expires after idle,
// unless the caps are reached or another process is making one of that
// shape: then id is empty. The standby is left on the host: the caller
// removes it at until with ExpireStandby.
func (w *Warm) MakeStandby(ctx context.Context, req contract.Request, idle time.Duration) (id string, until time.Time, err error) {
	req, err = req.Normalize()
	if err != nil {
		return "", until, err
	}
	if !contract.StandbyEligible(req) {
		return "", until, errors.New("a run with secrets or network egress has no standby")
	}
	key := contract.StandbyKey(req)
	unlock, ok, err := w.lock(ctx, reaper.StandbyLeasePrefix+key)
	if err != nil || !ok {
		return "", until, err
	}
	defer unlock()
	mine, all, err := w.standbys(ctx, key)
	if err != nil {
		return "", until, err
	}
	if mine >= contract.StandbyPerShape || all >= contract.StandbyTotal {
		return "", until, nil
	}
	rootfs, err := w.Rootfs(ctx, req)
	if err != nil {
		return "", until, err
	}
	until = time.Now().Add(idle)
	sb := w.NewSandbox(box.NewID(), req, true)
	sb.standby = map[string]string{reaper.LabelStandbyUntil: strconv.FormatInt(until.Unix(), 10)}
	if err := sb.Make(ctx, rootfs); err != nil {
		return "", until, errors.Join(err, sb.Destroy(ctx))
	}
	// The FIFO that wakes its maker is there before any run can claim it.
	if err := unix.Mkfifo(filepath.Join(sb.RunDir, standbyWake), 0o600); err != nil {
		return "", until, errors.Join(fmt.Errorf("making standby %s's wake FIFO: %w", sb.ID, err), sb.Destroy(ctx))
	}
	// Runs find it by this label, so it goes on once the gate holds the
	// program: a run that claimed a standby still being made would find no
	// task, and its removal of the container would leave the task the
	// maker was creating with none.
	if _, err := sb.Container.SetLabels(ctx, map[string]string{reaper.LabelStandby: key}); err != nil {
		return "", until, errors.Join(fmt.Errorf("labelling standby %s: %w", sb.ID, err), sb.Destroy(ctx))
	}
	return sb.ID, until, nil
}

// standbys counts the unclaimed standbys of shape key, and of all shapes.
func (w *Warm) standbys(ctx context.Context, key string) (mine, all int, err error) {
	cs, err := w.Containerd.Containers(ctx, `labels."`+reaper.LabelStandby+`"`)
	if err != nil {
		return 0, 0, fmt.Errorf("listing standbys: %w", err)
	}
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil || labels[reaper.LabelStandby] == "" {
			continue
		}
		all++
		if labels[reaper.LabelStandby] == key {
			mine++
		}
	}
	return mine, all, nil
}

// ExpireStandby removes standby id, unless a run claimed it first.
func (w *Warm) ExpireStandby(ctx context.Context, id string) error {
	c, err := w.Containerd.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return err
	}
	ok, err := w.claim(ctx, c, labels[reaper.LabelStandby], true)
	if err != nil || !ok {
		return err
	}
	return w.destroyLeftover(ctx, c)
}

// ClaimStandby returns a standby of req's shape, claimed, with this
// process's streams on it, or nil when there is none to claim.
func (w *Warm) ClaimStandby(ctx context.Context, req contract.Request) *Sandbox {
	if !w.useStandby || !contract.StandbyEligible(req) {
		return nil
	}
	key := contract.StandbyKey(req)
	cs, err := w.Containerd.Containers(ctx, `labels."`+reaper.LabelStandby+`"==`+strconv.Quote(key))
	if err != nil {
		log.G(ctx).WithError(err).Debug("listing standbys")
		return nil
	}
	// Racing runs try them in different orders.
	rand.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	for _, c := range cs {
		ok, err := w.claim(ctx, c, key, false)
		if err != nil {
			log.G(ctx).WithError(err).Debugf("claiming standby %s", c.ID())
		}
		if !ok {
			continue
		}
		sb, err := w.adopt(ctx, c, req)
		if err == nil {
			log.G(ctx).Debugf("claimed standby %s", c.ID())
			return sb
		}
		log.G(ctx).WithError(err).Debugf("standby %s cannot be used", c.ID())
		if err := sb.Destroy(ctx); err != nil {
			log.G(ctx).WithError(err).Debugf("removing standby %s", c.ID())
		}
	}
	return nil
}

// claim makes c, a standby of shape key, this process's: under the claim
// lock, it checks that c is still an unclaimed standby of that shape, not
// expired (unless expired is allowed: its maker removing it), and
// relabels it as claimed and owned by this process. A run that listed c
// before and takes the lock after sees the new labels and gives up.
func (w *Warm) claim(ctx context.Context, c containerd.Container, key string, expired bool) (bool, error) {
	if key == "" {
		return false, nil
	}
	unlock, ok, err := w.lock(ctx, reaper.ClaimLeasePrefix+c.ID())
	if err != nil || !ok {
		return false, err
	}
	// The lock goes while the run goes on (Close waits for it): once the
	// labels say claimed, no one else takes the standby anyway.
	defer func() {
		w.cleanups.Add(1)
		go func() {
			defer w.cleanups.Done()
			unlock()
		}()
	}()
	labels, err := c.Labels(ctx)
	if err != nil {
		return false, err
	}
	if labels[reaper.LabelStandby] != key {
		return false, nil
	}
	until, err := strconv.ParseInt(labels[reaper.LabelStandbyUntil], 10, 64)
	if !expired && (err != nil || !time.Now().Before(time.Unix(until, 0))) {
		return false, nil
	}
	if _, err := c.SetLabels(ctx, map[string]string{reaper.LabelStandby: "", reaper.LabelOwner: w.Owner}); err != nil {
		return false, fmt.Errorf("claiming standby %s: %w", c.ID(), err)
	}
	return true, nil
}

// lock takes the lease id, which only one process holds at a time: ok is
// false when another holds it. unlock removes it.
func (w *Warm) lock(ctx context.Context, id string) (unlock func(), ok bool, err error) {
	ls := w.Containerd.LeasesService()
	l, err := ls.Create(ctx, leases.WithID(id), leases.WithLabel(reaper.LabelOwner, w.Owner))
	if errdefs.IsAlreadyExists(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("taking lock %s: %w", id, err)
	}
	return func() {
		if err := ls.Delete(context.WithoutCancel(ctx), l); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debugf("releasing lock %s", id)
		}
	}, true, nil
}

// adopt turns a claimed standby into this process's sandbox for req: its
// run directory is this process's, and its program's streams are attached
// to this process. Its program is the gate's, still waiting for its line.
func (w *Warm) adopt(ctx context.Context, c containerd.Container, req contract.Request) (*Sandbox, error) {
	sb := w.NewSandbox(c.ID(), req, true)
	sb.Take(c, box.StateHeld)
	if err := reaper.AdoptRunDir(sb.RunDir); err != nil {
		return sb, err
	}
	wakeMaker(sb.RunDir)
	sb.Dirs.Code = filepath.Join(sb.RunDir, "code")
	sb.Dirs.Workspace = reaper.WorkspaceDir(sb.RunDir)
	if _, err := os.Stat(sb.Dirs.Workspace); err != nil {
		return sb, err
	}
	if err := sb.AdoptUserns(); err != nil {
		return sb, err
	}
	// An image rebuilt since the standby was made (same name, new
	// content) is the run's: the standby's root is not.
	opCtx := context.WithoutCancel(ctx)
	key, err := snapshots.ViewKey(opCtx, w.Containerd, req.ImageName())
	if err != nil {
		return sb, err
	}
	if info, err := c.Info(opCtx, containerd.WithoutRefreshedMetadata); err != nil || (info.SnapshotKey != key && info.Labels[snapshots.LabelView] != key) {
		return sb, fmt.Errorf("standby's image %s was replaced since it was made", req.ImageName())
	}
	sb.Limits = box.Limits(req, w.Facts)
	pr, pw := io.Pipe()
	sb.Stdin, sb.StdinW, sb.Gone = &contract.EOFReader{Reader: pr, EOF: make(chan struct{})}, pw, make(chan struct{})
	sb.Stdout, sb.Stderr = contract.NewCapped(req.OutputLimit, nil), contract.NewCapped(req.OutputLimit, nil)
	sb.Stderr.HoldInitLine()
	stdout, stderr := sb.MaskOutput(sb.Stdout, sb.Stderr)
	task, err := c.Task(opCtx, cio.NewAttach(cio.WithStreams(sb.Stdin, stdout, stderr)))
	if err != nil {
		return sb, fmt.Errorf("attaching to standby: %w", err)
	}
	sb.Task = task
	st, err := task.Status(opCtx)
	if err != nil || st.Status != containerd.Running {
		return sb, fmt.Errorf("standby's gate is %s (%v)", st.Status, err)
	}
	if err := w.VerifyLimits(sb.ID, sb.Limits); err != nil {
		return sb, err
	}
	if sb.StatusC, err = task.Wait(opCtx); err != nil {
		return sb, fmt.Errorf("waiting on task: %w", err)
	}
	return sb, nil
}

// fifosOnly makes the FIFOs of a standby's streams for a process that
// does not stay: the shim holds a writer of stdin (so that the program
// sees EOF only when a client closes it) and a reader of stdout and
// stderr of its own, but its writer of stdout and stderr opens only once
// a client reads. So this process opens those readers for the task's
// creation and closes them once it has started (detachedIO.Close), and
// never opens stdin at all: a writer of its own would keep the program
// from ever seeing EOF. The run that claims the standby attaches to them.
func fifosOnly(dir string) cio.Creator {
	return func(id string) (cio.IO, error) {
		fifos, err := cio.NewFIFOSetInDir(dir, id, false)
		if err != nil {
			return nil, err
		}
		d, err := box.NewDetachedIO(fifos.Config, []string{fifos.Stdin, fifos.Stdout, fifos.Stderr}, []string{fifos.Stdout, fifos.Stderr})
		if err != nil {
			return nil, err // not a nil *box.DetachedIO in a non-nil cio.IO
		}
		return d, nil
	}
}
