package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/secrets"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// Sandbox is one container for one program, from its run directory on
// the host to the removal of everything it was. What makes it a
// session's, a warm one's or a shared shim's is the layers' above: they
// keep it beside the Sandbox and attach through its Parts.
type Sandbox struct {
	h     *Host
	ID    string
	state State
	// Req is the normalized request the sandbox is shaped for; a
	// pre-created sandbox's is its pool's.
	Req contract.Request
	// Gate: the program waits for a line on stdin (pre-created sandboxes,
	// started before their request; boxer-init -g).
	Gate bool
	// Parts are what the layer that makes it adds (see Parts, and
	// SessionParts and WarmParts); nil for a plain run's.
	Parts Parts
	// RunscFlags are more flags for runsc, for this sandbox alone: a
	// build step's --overlay2=none, which writes its root through to
	// the host (see RunscFlagRootWritten).
	RunscFlags []string

	RunDir string
	Dirs   Dirs
	// Link is the sandbox's way out; nil without egress.
	Link *egress.Link
	// Plan is what the request's secrets become; CA and Injections are
	// the proxy's when it injects headers; masks hide the secrets' values
	// in the output.
	Plan       contract.SecretPlan
	CA         *egress.CA
	Injections []egress.Injection
	masks      []*secrets.Masker
	Limits     oci.Limits
	Container  containerd.Container
	Task       containerd.Task
	StatusC    <-chan containerd.ExitStatus
	// ended says that the task's process was seen to exit (see
	// endedTask).
	ended  bool
	Stdout *contract.Capped
	Stderr *contract.Capped
	Stdin  *contract.EOFReader
	StdinW *io.PipeWriter
	// Gone is closed by Destroy: goroutines of the run end with it.
	Gone    chan struct{}
	started time.Time
	// cpuBefore is the CPU time a preloaded sandbox's imports took,
	// which its run's figure leaves out.
	cpuBefore uint64
}

// To moves the sandbox to state next if it is in one of from.
func (sb *Sandbox) To(next State, from ...State) error {
	for _, s := range from {
		if sb.state == s {
			sb.state = next
			return nil
		}
	}
	return &stateError{id: sb.ID, from: sb.state, to: next}
}

// State is where the sandbox is in its life.
func (sb *Sandbox) State() State { return sb.state }

// Take makes c, a container found on containerd in state s (a leftover,
// a claimed standby), the sandbox's.
func (sb *Sandbox) Take(c containerd.Container, s State) {
	sb.Container, sb.state = c, s
}

// NewSandbox returns a sandbox for a normalized request, in state new.
func (h *Host) NewSandbox(id string, req contract.Request, gate bool) *Sandbox {
	return &Sandbox{h: h, ID: id, Req: req, Gate: gate, RunDir: filepath.Join(h.RunsDir, id)}
}

// Make prepares and creates the sandbox on rootfs (and, gated, starts its
// gate). On error, the caller destroys it.
func (sb *Sandbox) Make(ctx context.Context, rootfs snapshots.Rootfs) error {
	sb.LookUpView(ctx, rootfs)
	if err := sb.Prepare(); err != nil {
		return err
	}
	return sb.Create(ctx, rootfs)
}

// Prepare makes the host side: the run directory with its owner, the code
// directory with boxer-init in it and the workspace tmpfs (or the
// Parts' own: a session's files tmpfs).
func (sb *Sandbox) Prepare() error {
	if err := sb.To(StatePrepared, StateNew); err != nil {
		return err
	}
	if _, err := reaper.MakeRunDir(sb.h.RunsDir, sb.h.Namespace, sb.ID); err != nil {
		return err
	}
	if sb.wantsUserns() {
		if err := sb.makeUserns(); err != nil {
			return err
		}
	}
	uid, gid := sb.HostIDs()
	sb.Dirs.Code = filepath.Join(sb.RunDir, "code")
	if err := os.Mkdir(sb.Dirs.Code, 0o755); err != nil {
		return fmt.Errorf("creating code directory: %w", err)
	}
	if err := LinkInit(sb.h.Facts.Init, sb.Dirs.Code); err != nil {
		return err
	}
	if sb.Dirs.Preload = sb.preloads(); sb.Dirs.Preload {
		if err := writePreloadHook(sb.Dirs.Code, sb.Req.PreloadModules()); err != nil {
			return err
		}
	}
	if own, err := sb.session().Files(sb, uid, gid); err != nil {
		return err
	} else if !own {
		sb.Dirs.Workspace = reaper.WorkspaceDir(sb.RunDir)
		if err := MountWorkspace(sb.Dirs.Workspace, sb.Req.TmpBytes, uid, gid); err != nil {
			return err
		}
	}
	if err := sb.prepareSecrets(); err != nil {
		return err
	}
	if sb.Req.HasEgress() {
		return sb.attachLink()
	}
	return sb.session().Loopback(sb)
}

// Create makes the container and its task: the runtime creates the
// namespaces, mounts and cgroup, and boxer checks that the kernel enforces
// the limits before anything runs. A gated sandbox is started too: its gate
// holds the program. Creation RPCs are not cut by ctx (a cancelled one could
// leave an object boxer does not know of); ctx is honoured between them.
func (sb *Sandbox) Create(ctx context.Context, rootfs snapshots.Rootfs) error {
	next := StateCreated
	if sb.Gate {
		next = StateHeld
	}
	if err := sb.To(next, StatePrepared); err != nil {
		return err
	}
	r, parts, session, warm := sb.h, sb.parts(), sb.session(), sb.warm()
	if err := sb.mountRoot(ctx, rootfs); err != nil {
		return err
	}
	sb.Limits = Limits(sb.Req, r.Facts)
	spec, err := BuildSpec(sb.ID, sb.Req, rootfs.Config.Env, r.Facts, sb.Dirs, sb.Gate)
	if err != nil {
		return err
	}
	labels := map[string]string{reaper.LabelSandbox: "true", reaper.LabelOwner: r.Owner}
	if err := parts.Shape(sb, spec, labels); err != nil {
		return err
	}
	if sb.Dirs.Root != "" {
		labels[snapshots.LabelView] = rootfs.Key
	}
	// A session's runsc has its netstack so that its ports can be
	// forwarded (SessionParts.Netstack).
	shim, shimOpts, err := r.Runtime(sb.Req.Runtime, sb.Link != nil || session.Netstack(), sb.Dirs.Userns != nil, sb.RunscFlags...)
	if err != nil {
		return err
	}
	member := warm.JoinShim(ctx)
	opCtx := context.WithoutCancel(ctx)
	for retried := false; ; retried = true {
		opts := []containerd.NewContainerOpts{
			containerd.WithSpec(spec),
			containerd.WithRuntime(shim, shimOpts),
			containerd.WithContainerLabels(labels),
			WithRootfs(rootfs, sb.Dirs.Root != ""),
		}
		if member != "" {
			opts = append(opts, containerd.WithSandbox(member))
		}
		sb.Container, err = r.Containerd.NewContainer(r.WithContainerLease(opCtx), sb.ID, opts...)
		if err != nil {
			return fmt.Errorf("creating container: %w", err)
		}
		if ctx.Err() != nil {
			return contract.ErrInterrupted
		}
		sb.Task, err = sb.Container.NewTask(opCtx, sb.streams(), session.Restore()...)
		if err == nil {
			break
		}
		if retried || !warm.ShimDied(opCtx) {
			return &RuntimeError{Step: "starting sandbox", Err: err}
		}
		// Its shared shim died before the task was made: once more, with
		// the next one.
		log.G(ctx).WithError(err).Debugf("sandbox %s: its shared shim died, trying another", sb.ID)
		if err := removeContainer(opCtx, sb.Container, nil); err != nil {
			return fmt.Errorf("removing sandbox %s: %w", sb.ID, err)
		}
		sb.Container = nil
		warm.LeaveShim()
		member = warm.JoinShim(ctx)
	}
	if session.Restore() == nil {
		// A restored one's sandbox is made when it starts (a fork's).
		if err := r.VerifyLimits(sb.ID, sb.Limits); err != nil {
			return err
		}
	}
	if sb.StatusC, err = sb.Task.Wait(opCtx); err != nil {
		return fmt.Errorf("waiting on task: %w", err)
	}
	if sb.Gate {
		if err := sb.Task.Start(opCtx); err != nil {
			return &RuntimeError{Step: "starting sandbox", Err: err}
		}
	}
	if warm.Detached() {
		// Its streams are the claiming run's (a standby's).
		sb.Task.IO().Close()
	}
	if sb.Dirs.Preload {
		return sb.waitPreloaded(ctx)
	}
	return nil
}

// streams makes the sandbox's stdin pipe and output buffers anew and
// returns what creates its task's IO from them. stdin is a pipe the
// program reads once it starts: the request's stdin is copied in then, so
// a sandbox can be made before it is known.
func (sb *Sandbox) streams() cio.Creator {
	if sb.StdinW != nil {
		// A task creation tried before: its copy of stdin ends.
		sb.StdinW.Close()
	}
	if sb.Gone == nil {
		sb.Gone = make(chan struct{})
	}
	pr, pw := io.Pipe()
	sb.Stdin, sb.StdinW = &contract.EOFReader{Reader: pr, EOF: make(chan struct{})}, pw
	sb.Stdout, sb.Stderr = contract.NewCapped(sb.Req.OutputLimit, nil), contract.NewCapped(sb.Req.OutputLimit, nil)
	sb.Stderr.HoldInitLine()
	if c := sb.parts().Streams(sb); c != nil {
		// A session's wire or none, a standby's FIFOs for the run that
		// claims it.
		return c
	}
	stdout, stderr := sb.MaskOutput(sb.Stdout, sb.Stderr)
	return cio.NewCreator(cio.WithStreams(sb.Stdin, stdout, stderr), cio.WithFIFODir(sb.RunDir))
}

// Deliver gives the sandbox its request's code, files and output settings.
// The program has not run yet: nothing it could see changes under it.
func (sb *Sandbox) Deliver(d contract.Delivery) error {
	if sb.state != StateCreated && sb.state != StateHeld {
		return &stateError{id: sb.ID, from: sb.state, to: StateRunning}
	}
	if sb.Req.Lang != "" {
		p, err := contract.LookupPreset(sb.Req.Lang)
		if err != nil {
			return err
		}
		if err := WriteCode(sb.Dirs.Code, p.File, d.Code, p.Support); err != nil {
			return err
		}
	}
	sb.Stdout.Reset(d.OutputLimit, d.Stdout)
	sb.Stderr.Reset(d.OutputLimit, d.Stderr)
	if sb.preloads() {
		if err := sb.removePreloadMarker(); err != nil {
			return err
		}
	}
	if sb.Link != nil {
		if err := sb.startLink(d); err != nil {
			return err
		}
	}
	uid, gid := sb.HostIDs()
	if d.CopyIn != "" {
		if err := CopyIn(d.CopyIn, sb.Dirs.Workspace, sb.Req.TmpBytes, uid, gid); err != nil {
			return err
		}
	}
	return WriteFiles(sb.Dirs.Workspace, d.Files, uid, gid)
}

// Start lets the program run (the task starts, or the gate gets its line)
// and feeds it stdin.
func (sb *Sandbox) Start(ctx context.Context, stdin io.Reader) error {
	held := sb.state == StateHeld
	if err := sb.To(StateRunning, StateCreated, StateHeld); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return contract.ErrInterrupted
	}
	opCtx := context.WithoutCancel(ctx)
	sb.started = time.Now()
	if held {
		if sb.preloads() {
			sb.cpuBefore = sb.cpuSoFar()
		}
		if _, err := io.WriteString(sb.StdinW, "\n"); err != nil {
			return fmt.Errorf("starting sandbox: %w", err)
		}
	} else if err := sb.Task.Start(opCtx); err != nil {
		// A shared shim killed under the start: the task is gone or the
		// connection closed (a runtime's own failure is neither, and does
		// not wait for ShimLost).
		if (errdefs.IsNotFound(err) || errdefs.IsUnavailable(err) || strings.Contains(err.Error(), "closed")) && sb.warm().ShimLost() {
			return shimDiedError(err)
		}
		return &RuntimeError{Step: "starting sandbox", Err: err}
	}
	go func() {
		if stdin != nil {
			_, _ = io.Copy(sb.StdinW, stdin)
		}
		sb.StdinW.Close()
	}()
	// The shim holds the stdin FIFO open: the program sees EOF only once
	// containerd is told that the input is over.
	go func() {
		select {
		case <-sb.Stdin.EOF:
		case <-sb.Gone:
			return
		}
		if err := sb.Task.CloseIO(opCtx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debug("closing stdin")
		}
	}()
	return nil
}

// shimDiedError is a run's end when its shared shim died under it.
func shimDiedError(err error) error {
	return fmt.Errorf("the sandbox's shim died (it served other sandboxes too; the next run gets a new one): %w", err)
}

// Exit is how the program ended and what it cost.
type Exit struct {
	Facts    contract.ExitFacts
	Duration time.Duration
	Stats    cgroups.Stats
}

// Wait waits for the program to end, for the timeout (then the whole
// sandbox is killed: every process in its PID namespace) or for ctx (the
// same), and reads its figures from its cgroup before the task goes.
func (sb *Sandbox) Wait(ctx context.Context, timeout time.Duration) (Exit, error) {
	var e Exit
	if err := sb.To(StateExited, StateRunning); err != nil {
		return e, err
	}
	opCtx := context.WithoutCancel(ctx)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var status containerd.ExitStatus
	select {
	case status = <-sb.StatusC:
	case <-timer.C:
		e.Facts.TimedOut = true
	case <-ctx.Done():
		e.Facts.Interrupted = true
	}
	if e.Facts.TimedOut || e.Facts.Interrupted {
		if err := sb.Task.Kill(opCtx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Warn("killing sandbox")
		}
		select {
		case status = <-sb.StatusC:
		case <-time.After(reaper.CleanupTimeout):
			return e, fmt.Errorf("sandbox %s did not exit after SIGKILL", sb.ID)
		}
	}
	if err := status.Error(); err != nil {
		if sb.warm().ShimLost() {
			return e, shimDiedError(err)
		}
		return e, fmt.Errorf("waiting for sandbox exit: %w", err)
	}
	sb.ended = true
	end := time.Now()
	if t := status.ExitTime(); !t.IsZero() && t.After(sb.started) {
		end = t
	}
	e.Duration = end.Sub(sb.started)
	e.Facts.Status = status.ExitCode()
	stats, err := cgroups.ReadStats(sb.h.Cgroups, reaper.CgroupsPath(sb.h.Namespace, sb.ID))
	if err != nil {
		log.G(ctx).WithError(err).Warn("reading sandbox cgroup")
	}
	stats.CPUTimeNs -= min(sb.cpuBefore, stats.CPUTimeNs)
	e.Stats, e.Facts.OOMKills = stats, stats.OOMKills
	err = sb.drain(opCtx)
	sb.flushMasks()
	return e, err
}

// VerifyLimits checks that the host's cgroups enforce l on sandbox id.
func (h *Host) VerifyLimits(id string, l oci.Limits) error {
	quota, period := l.CPUQuota()
	want := cgroups.Limits{MemoryBytes: uint64(l.MemoryBytes), CPUQuotaUs: quota, CPUPeriodUs: period, Pids: uint64(l.Pids)}
	got, err := cgroups.ReadLimits(h.Cgroups, reaper.CgroupsPath(h.Namespace, id))
	if err == nil {
		err = cgroups.Verify(got, want)
	}
	if err != nil {
		return fmt.Errorf("this host's cgroups do not enforce the sandbox's limits (%w): run 'boxer doctor'", err)
	}
	return nil
}
