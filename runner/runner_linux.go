package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/runner/session"
	"github.com/boxer-dev/boxer/runner/warm"
)

// Runner runs sandboxes on one containerd.
type Runner struct {
	// Host is what the sandbox's life needs of the host and containerd.
	*box.Host
	// realShim is the runc shim's binary, where known (boxer's private
	// daemon): for the reaper.
	realShim string
	// handOff: runs leave their sandboxes in handedOff (Options.HandOff).
	handOff   bool
	handedMu  sync.Mutex
	handedOff []string
	reaper    *reaper.Reaper
	// warm keeps the pool, the standbys and the shared shims.
	warm *warm.Warm
	// Layer keeps the sessions; its methods are the Runner's.
	*session.Layer
	// cleanups are the teardowns in the background that Close waits
	// for, the layers' and the Runner's.
	cleanups sync.WaitGroup
}

// runcShim is containerd's runc shim, the runtime of every sandbox.
const runcShim = "io.containerd.runc.v2"

// New connects to containerd, starting boxer's private one if needed.
func New(ctx context.Context, o Options) (*Runner, error) {
	if o.Namespace == "" {
		o.Namespace = "boxer"
	}
	address, err := daemon.Resolve(ctx, o.Daemon, o.Address, o.Progress)
	if err != nil {
		return nil, err
	}
	if o.Address != "" && !daemon.Answers(address) {
		// Said at once, not after the client's dial timeout.
		return nil, box.NoContainerd(address)
	}
	client, err := containerd.New(address, containerd.WithDefaultNamespace(o.Namespace), containerd.WithTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	r := &Runner{
		Host: &box.Host{
			Containerd: client,
			Address:    address,
			Namespace:  o.Namespace,
			StateDir:   o.Daemon.State,
			RunsDir:    filepath.Join(o.Daemon.State, "runs"),
			Cgroups:    cgroups.DetectMode(),
			Facts:      box.HostFacts{Namespace: o.Namespace, NoFile: nofileLimit(), Init: box.FindInit()},
			Owner:      reaper.Self(),
			Shim:       runcShim,
			Wrap:       box.WrapBinary(),
			Secrets:    o.Secrets,
			Inject:     o.Inject,
		},
		handOff: o.HandOff,
	}
	if r.Egress, err = box.NewEgressSetup(o.Egress); err != nil {
		client.Close()
		return nil, err
	}
	if r.Userns, err = box.NewUsernsSetup(o.Userns); err != nil {
		client.Close()
		return nil, err
	}
	r.UseHolders()
	v2 := r.containerd2(ctx)
	if address == o.Daemon.Address() {
		r.Private = true
		r.BundlesDir = filepath.Join(o.Daemon.ContainerdState(), reaper.TaskBundles)
		r.realShim = box.ShimBinary(o.Daemon, v2)
		if v2 {
			r.useShimWrapper(ctx)
		}
		if err := r.CheckBundlesWalkable(o.Daemon.State); err != nil {
			client.Close()
			return nil, err
		}
	}
	shared := 0
	if o.SharedShims > 0 {
		if v2 {
			shared = o.SharedShims
		} else {
			log.G(ctx).Debug("sandboxes run with shims of their own: sharing one needs containerd 2.x")
		}
	}
	r.warm = warm.New(r.Host, &r.cleanups, o.Standby, shared, contract.Or(o.ShimRuns, DefaultShimRuns))
	r.Layer = session.New(r.Host, &r.cleanups, r.warm, session.Options{
		CheckpointsDir: filepath.Join(o.Daemon.Root, "checkpoints", o.Namespace),
		KeptDir:        filepath.Join(o.Daemon.Root, "kept", o.Namespace),
		Keeper:         o.Keeper,
		SessionID:      o.SessionID,
		Ceilings:       o.Ceilings,
	})
	if o.Reap {
		r.reaper = reaper.Start(ctx, reaper.Config{
			Client: client, Namespace: r.Namespace, Address: address,
			Runs: r.RunsDir, State: r.StateDir, Bundles: r.BundlesDir, Shim: r.realShim, Runc: box.RuncBinary(),
			Cgroups: r.Cgroups, Destroy: r.destroyLeftover, After: r.sweep, Exited: r.Layer.Exited,
		})
	}
	return r, nil
}

// containerd2 says whether containerd is 2.x: the version that re-runs
// the shim's delete (see useShimWrapper) and has a sandbox store (see
// shims_linux.go).
func (r *Runner) containerd2(ctx context.Context) bool {
	v, err := r.Containerd.Version(ctx)
	return err == nil && strings.HasPrefix(strings.TrimPrefix(v.Version, "v"), "2.")
}

// useShimWrapper runs the private daemon's sandboxes through the shim
// wrapper, on containerd 2.x. Without it everything works the same, only
// slower.
func (r *Runner) useShimWrapper(ctx context.Context) {
	if r.realShim == "" {
		return
	}
	script := reaper.ShimScript(r.realShim)
	if r.Wrap != "" {
		if w, ok := box.WrapFile(r.Wrap, "containerd's runc shim, without the second \"runc delete\" containerd 2.x runs after each task is deleted (see boxer's reaper package).", reaper.ShimWrap(r.realShim)...); ok {
			script = w
		}
	}
	if p, err := box.WriteScript(filepath.Join(r.StateDir, "shim"), script); err == nil {
		r.Shim, r.ShimContent = p, script
	} else {
		log.G(ctx).WithError(err).Warn("using containerd's runc shim as is")
	}
}

// Client is the containerd client, for image management.
func (r *Runner) Client() *containerd.Client { return r.Containerd }

// Close removes the pre-created sandboxes, waits for teardowns, removes
// the shared shims, waits for the reaper, and closes the connection.
func (r *Runner) Close() error {
	owner, ids := r.TakeHandedOff()
	r.RemoveSandboxes(context.Background(), owner, ids)
	r.CloseReady()
	r.warm.Close()
	r.reaper.Wait()
	r.CloseContainerLease()
	return r.Containerd.Close()
}

// Run runs req in a fresh sandbox and removes every trace of it. A non-nil
// error means boxer could not run the sandbox (exit 125) or was
// interrupted; the program's own failures are in the Result.
func (r *Runner) Run(ctx context.Context, req contract.Request) (res contract.Result, retErr error) {
	res = contract.Result{ID: box.NewID(), Status: contract.StatusError, ExitCode: contract.ExitBoxer, Runtime: req.Runtime, Image: req.Image}
	defer func() {
		if retErr != nil {
			retErr = r.Fault(ctx, retErr)
			res.Error = retErr.Error()
		}
	}()
	req, err := req.Normalize()
	if err != nil {
		return res, err
	}
	res.Runtime, res.Image = req.Runtime, req.ImageName()
	if err := r.CheckSecretsAvailable(req); err != nil {
		return res, err
	}
	defer r.warm.Busy()()
	sb, err := r.sandboxFor(ctx, res.ID, req)
	handOff := false
	if sb != nil {
		defer func() { retErr = errors.Join(retErr, r.release(ctx, sb, handOff)) }()
	}
	if err == nil {
		err = sb.Deliver(req.Delivery())
	}
	if err == nil {
		err = sb.Start(ctx, req.Stdin)
	}
	if err != nil {
		return box.StartFailed(res, err)
	}
	e, err := sb.Wait(ctx, req.Timeout)
	if err != nil {
		return res, err
	}
	res, err = result(sb.Sandbox, res, e, req.Delivery())
	handOff = err == nil && r.handOff && !sb.Pooled() && contract.StandbyEligible(req)
	return res, err
}

// sandboxFor returns a sandbox for req, created and ready to start: a
// pre-created one of its shape, or a new one. When the error is not nil
// and the sandbox is, nothing was made.
func (r *Runner) sandboxFor(ctx context.Context, id string, req contract.Request) (*warm.Sandbox, error) {
	if sb := r.warm.Take(ctx, req); sb != nil {
		return sb, nil
	}
	if sb := r.warm.ClaimStandby(ctx, req); sb != nil {
		return sb, nil
	}
	rootfs, err := r.Rootfs(ctx, req)
	if err != nil {
		return nil, err
	}
	sb := r.warm.NewSandbox(id, req, false)
	return sb, sb.Make(ctx, rootfs)
}

// release leaves a run's sandbox to the next standby's maker when handOff
// says so (Options.HandOff), or has warm tear it down (Warm.Release).
func (r *Runner) release(ctx context.Context, sb *warm.Sandbox, handOff bool) error {
	if handOff {
		r.handedMu.Lock()
		r.handedOff = append(r.handedOff, sb.ID)
		r.handedMu.Unlock()
		return nil
	}
	return r.warm.Release(ctx, sb)
}

// result completes res from how sb's program ended, its output, and the
// files it left for --copy-out (also after a timeout or an OOM kill).
func result(sb *box.Sandbox, res contract.Result, e box.Exit, d contract.Delivery) (contract.Result, error) {
	res.DurationMs = float64(e.Duration.Microseconds()) / 1000
	res.MemoryPeakBytes = e.Stats.MemoryPeakBytes
	res.CPUTimeMs = float64(e.Stats.CPUTimeNs/1000) / 1000
	res.Stdout, res.StdoutTruncated = sb.Stdout.Text()
	res.Stderr, res.StderrTruncated = sb.Stderr.Text()
	if sb.Link != nil {
		n := sb.Link.Report()
		res.Network = &n
	}
	res.Secrets, res.Injected = sb.Plan.FileNames(), sb.Plan.InjectedHeaders()
	var copyErr error
	if d.CopyOut != "" && !e.Facts.Interrupted {
		res.FilesOut, res.FilesSkipped, copyErr = box.CopyOut(sb.Dirs.Workspace, d.CopyOut, sb.Req.TmpBytes)
		if res.FilesOut == nil {
			res.FilesOut = []contract.File{}
		}
	}
	if len(d.ReturnFiles) > 0 && !e.Facts.Interrupted {
		res.Files = box.ReturnFiles(sb.Dirs.Workspace, d.ReturnFiles, d.ReturnBytes)
	}
	o := contract.Classify(e.Facts)
	res.Status, res.ExitCode, res.Signal = o.Status, o.Code, o.Signal
	execFailed := false
	if o.Status == contract.StatusExited && !res.StdoutTruncated && !res.StderrTruncated {
		// Told as a runtime's failure to execute it is (box.StartFailed).
		var detail string
		if detail, execFailed = contract.InitExecFailure(e.Facts.Status, res.Stdout, res.Stderr); execFailed {
			res.Status, res.Error, res.Stderr = contract.StatusError, detail, ""
		}
	}
	sb.Stderr.Release(execFailed)
	if e.Facts.Interrupted {
		return res, contract.ErrInterrupted
	}
	return res, copyErr
}

// TakeHandedOff returns the sandboxes this Runner's runs handed off (see
// Options.HandOff), and the owner their labels name: the caller removes
// them, or has RemoveSandboxes in another process remove them. Close
// removes those not taken.
func (r *Runner) TakeHandedOff() (owner string, ids []string) {
	r.handedMu.Lock()
	defer r.handedMu.Unlock()
	ids, r.handedOff = r.handedOff, nil
	return r.Owner, ids
}

// HandTo makes the process owner (reaper.OwnerOf) responsible for the
// sandboxes ids that this Runner's runs handed off: while it lives, no
// reaper removes them, though their labels name this process.
func (r *Runner) HandTo(owner string, ids []string) {
	for _, id := range ids {
		if err := reaper.HandRunDir(filepath.Join(r.RunsDir, id), owner); err != nil {
			log.G(context.Background()).WithError(err).Debugf("handing sandbox %s", id)
		}
	}
}

// RemoveSandboxes removes the sandboxes ids that owner (a boxer process,
// perhaps gone) handed off, after this process's reaper pass (which may
// have removed them already, their owner being gone). It removes nothing
// else: a sandbox whose labels name another owner, or a standby, stays.
func (r *Runner) RemoveSandboxes(ctx context.Context, owner string, ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	r.reaper.Wait()
	for _, id := range ids {
		c, err := r.Containerd.LoadContainer(ctx, id)
		if err != nil {
			if !errdefs.IsNotFound(err) {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", id)
			}
			continue
		}
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || info.Labels[reaper.LabelSandbox] != "true" || info.Labels[reaper.LabelOwner] != owner || info.Labels[reaper.LabelStandby] != "" {
			continue
		}
		if err := r.destroyLeftover(ctx, c); err != nil {
			log.G(ctx).WithError(err).Warnf("removing sandbox %s", id)
		}
	}
}

// nofileLimit is the sandbox's RLIMIT_NOFILE: 1024, or the caller's hard
// limit if lower (raising a hard limit needs CAP_SYS_RESOURCE).
func nofileLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Max < 1024 {
		return rl.Max
	}
	return 1024
}

// Health checks containerd and the presets' images.
func (r *Runner) Health(ctx context.Context) contract.Health {
	h := contract.Health{Images: map[string]bool{}}
	v, err := r.Containerd.Version(ctx)
	if err != nil {
		h.Containerd = "unreachable: " + err.Error()
		return h
	}
	h.Containerd = v.Version
	h.OK = true
	for _, p := range contract.Presets() {
		_, err := r.Containerd.ImageService().Get(ctx, p.Image)
		h.Images[p.Name] = err == nil
		h.OK = h.OK && err == nil
	}
	return h
}

// sweep returns what sandboxes whose run directory is gone held on the
// host (the reaper's last step: it has removed the run directories of
// dead boxer processes): their links and their blocks of ids.
func (r *Runner) sweep(ctx context.Context) {
	r.SweepLinks(ctx)
	r.SweepCheckpoints(ctx)
	r.SweepKept(ctx)
	r.SweepUserns(ctx)
}

// ShimName is boxer's build of containerd's runc shim (sandbox.ShimName).
const ShimName = box.ShimName

// InitBinary is the boxer-init every sandbox runs as its PID 1, or an
// error saying how to install it (sandbox.InitBinary).
func InitBinary() (string, error) { return box.InitBinary() }
