package runner

import (
	"context"
	"fmt"
	"io"
	"maps"
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
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/secrets"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// state is where a sandbox is in its life. Each step moves it on by one
// state; destroy ends it from any state, and is the only way to remove it.
type state int

const (
	// stateNew: a value only, nothing on the host yet.
	stateNew state = iota
	// statePrepared: its run directory, owner, code directory and
	// workspace are on the host.
	statePrepared
	// stateCreated: container and task created (the runtime made the
	// namespaces, mounts and cgroup), limits verified, exit awaited.
	stateCreated
	// stateHeld: started with its program held by the gate until a
	// request comes (pre-created sandboxes).
	stateHeld
	// stateRunning: the program runs.
	stateRunning
	// stateExited: the program has ended and its figures are read.
	stateExited
	// stateDestroyed: nothing of it is left.
	stateDestroyed
)

func (s state) String() string {
	return [...]string{"new", "prepared", "created", "held", "running", "exited", "destroyed"}[s]
}

// stateError is a step taken in a state it cannot be taken from.
type stateError struct {
	id       string
	from, to state
}

func (e *stateError) Error() string {
	return fmt.Sprintf("sandbox %s: cannot go from %s to %s", e.id, e.from, e.to)
}

// sandbox is one container for one program, from its run directory on the
// host to the removal of everything it was.
type sandbox struct {
	r     *Runner
	id    string
	state state
	// req is the normalized request the sandbox is shaped for; a
	// pre-created sandbox's is its pool's.
	req contract.Request
	// gate: the program waits for a line on stdin (pre-created sandboxes,
	// started before their request; boxer-init -g).
	gate bool
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

	runDir string
	dirs   box.Dirs
	// link is the sandbox's way out; nil without egress.
	link *egress.Link
	// plan is what the request's secrets become; ca and injections are
	// the proxy's when it injects headers; masks hide the secrets' values
	// in the output.
	plan       contract.SecretPlan
	ca         *egress.CA
	injections []egress.Injection
	masks      []*secrets.Masker
	limits     oci.Limits
	container  containerd.Container
	task       containerd.Task
	statusC    <-chan containerd.ExitStatus
	// ended says that the task's process was seen to exit (see
	// endedTask).
	ended  bool
	stdout *contract.Capped
	stderr *contract.Capped
	stdin  *contract.EOFReader
	stdinW *io.PipeWriter
	// gone is closed by destroy: goroutines of the run end with it.
	gone    chan struct{}
	started time.Time
	// cpuBefore is the CPU time a preloaded sandbox's imports took,
	// which its run's figure leaves out.
	cpuBefore uint64
}

// to moves the sandbox to state next if it is in one of from.
func (sb *sandbox) to(next state, from ...state) error {
	for _, s := range from {
		if sb.state == s {
			sb.state = next
			return nil
		}
	}
	return &stateError{id: sb.id, from: sb.state, to: next}
}

// newSandbox returns a sandbox for a normalized request, in state new.
func (r *Runner) newSandbox(id string, req contract.Request, gate bool) *sandbox {
	return &sandbox{r: r, id: id, req: req, gate: gate, runDir: filepath.Join(r.RunsDir, id)}
}

// make prepares and creates the sandbox on rootfs (and, gated, starts its
// gate). On error, the caller destroys it.
func (sb *sandbox) make(ctx context.Context, rootfs snapshots.Rootfs) error {
	sb.lookUpView(ctx, rootfs)
	if err := sb.prepare(); err != nil {
		return err
	}
	return sb.create(ctx, rootfs)
}

// prepare makes the host side: the run directory with its owner, the code
// directory with boxer-init in it and the workspace tmpfs (a session's
// files tmpfs).
func (sb *sandbox) prepare() error {
	if err := sb.to(statePrepared, stateNew); err != nil {
		return err
	}
	if _, err := reaper.MakeRunDir(sb.r.RunsDir, sb.r.Namespace, sb.id); err != nil {
		return err
	}
	if sb.wantsUserns() {
		if err := sb.makeUserns(); err != nil {
			return err
		}
	}
	uid, gid := sb.hostIDs()
	sb.dirs.Code = filepath.Join(sb.runDir, "code")
	if err := os.Mkdir(sb.dirs.Code, 0o755); err != nil {
		return fmt.Errorf("creating code directory: %w", err)
	}
	if err := box.LinkInit(sb.r.Facts.Init, sb.dirs.Code); err != nil {
		return err
	}
	if sb.dirs.Preload = sb.preloads(); sb.dirs.Preload {
		if err := writePreloadHook(sb.dirs.Code, sb.req.PreloadModules()); err != nil {
			return err
		}
	}
	if sb.session != nil {
		if err := sb.mountSessionFiles(uid, gid); err != nil {
			return err
		}
	} else {
		sb.dirs.Workspace = reaper.WorkspaceDir(sb.runDir)
		if err := box.MountWorkspace(sb.dirs.Workspace, sb.req.TmpBytes, uid, gid); err != nil {
			return err
		}
	}
	if err := sb.prepareSecrets(); err != nil {
		return err
	}
	if sb.req.HasEgress() {
		return sb.attachLink()
	}
	return sb.makeLoopback()
}

// create makes the container and its task: the runtime creates the
// namespaces, mounts and cgroup, and boxer checks that the kernel enforces
// the limits before anything runs. A gated sandbox is started too: its gate
// holds the program. Creation RPCs are not cut by ctx (a cancelled one could
// leave an object boxer does not know of); ctx is honoured between them.
func (sb *sandbox) create(ctx context.Context, rootfs snapshots.Rootfs) error {
	next := stateCreated
	if sb.gate {
		next = stateHeld
	}
	if err := sb.to(next, statePrepared); err != nil {
		return err
	}
	r := sb.r
	if err := sb.mountRoot(ctx, rootfs); err != nil {
		return err
	}
	sb.limits = box.Limits(sb.req, r.Facts)
	spec, err := box.BuildSpec(sb.id, sb.req, rootfs.Config.Env, r.Facts, sb.dirs, sb.gate)
	if err != nil {
		return err
	}
	labels := map[string]string{reaper.LabelSandbox: "true", reaper.LabelOwner: r.Owner}
	if sb.session != nil {
		if err := sb.session.shape(spec, sb.req, sb.dirs.SecretEnv, labels); err != nil {
			return err
		}
	}
	if sb.anchor {
		labels[reaper.LabelAnchor] = "true"
	}
	maps.Copy(labels, sb.standby)
	if sb.dirs.Root != "" {
		labels[snapshots.LabelView] = rootfs.Key
	}
	// A session's runsc has its netstack so that its ports can be
	// forwarded (session_port_linux.go).
	shim, shimOpts, err := r.Runtime(sb.req.Runtime, sb.link != nil || sb.session != nil, sb.dirs.Userns != nil)
	if err != nil {
		return err
	}
	if sb.shares() {
		sb.member = r.joinShim(ctx)
	}
	opCtx := context.WithoutCancel(ctx)
	for retried := false; ; retried = true {
		opts := []containerd.NewContainerOpts{
			containerd.WithSpec(spec),
			containerd.WithRuntime(shim, shimOpts),
			containerd.WithContainerLabels(labels),
			box.WithRootfs(rootfs, sb.dirs.Root != ""),
		}
		if sb.member != nil {
			opts = append(opts, containerd.WithSandbox(sb.member.id))
		}
		sb.container, err = r.Containerd.NewContainer(r.WithContainerLease(opCtx), sb.id, opts...)
		if err != nil {
			return fmt.Errorf("creating container: %w", err)
		}
		if ctx.Err() != nil {
			return contract.ErrInterrupted
		}
		sb.task, err = sb.container.NewTask(opCtx, sb.streams(), sb.restoreOpts()...)
		if err == nil {
			break
		}
		if retried || !r.shimDied(opCtx, sb) {
			return &runtimeError{step: "starting sandbox", err: err}
		}
		// Its shared shim died before the task was made: once more, with
		// the next one.
		log.G(ctx).WithError(err).Debugf("sandbox %s: its shared shim died, trying another", sb.id)
		if err := removeContainer(opCtx, sb.container, nil); err != nil {
			return fmt.Errorf("removing sandbox %s: %w", sb.id, err)
		}
		sb.container = nil
		r.leaveShim(sb.member)
		sb.member = r.joinShim(ctx)
	}
	if sb.restoreOpts() == nil {
		// A restored one's sandbox is made when it starts (startFork).
		if err := r.verifyLimits(sb.id, sb.limits); err != nil {
			return err
		}
	}
	if sb.statusC, err = sb.task.Wait(opCtx); err != nil {
		return fmt.Errorf("waiting on task: %w", err)
	}
	if sb.gate {
		if err := sb.task.Start(opCtx); err != nil {
			return &runtimeError{step: "starting sandbox", err: err}
		}
	}
	if sb.standby != nil {
		// Its streams are the claiming run's (see fifosOnly).
		sb.task.IO().Close()
	}
	if sb.dirs.Preload {
		return sb.waitPreloaded(ctx)
	}
	return nil
}

// shares says whether the sandbox shares a shim with others: a run's or
// a pre-created sandbox on runc, when shims are shared. Sessions live too
// long (their shim could not be recycled), and gVisor's sandboxes each
// need their own.
func (sb *sandbox) shares() bool {
	return sb.r.shims != nil && !sb.anchor && sb.session == nil && sb.req.Runtime == "runc"
}

// streams makes the sandbox's stdin pipe and output buffers anew and
// returns what creates its task's IO from them. stdin is a pipe the
// program reads once it starts: the request's stdin is copied in then, so
// a sandbox can be made before it is known.
func (sb *sandbox) streams() cio.Creator {
	if sb.stdinW != nil {
		// A task creation tried before: its copy of stdin ends.
		sb.stdinW.Close()
	}
	if sb.gone == nil {
		sb.gone = make(chan struct{})
	}
	pr, pw := io.Pipe()
	sb.stdin, sb.stdinW = &contract.EOFReader{Reader: pr, EOF: make(chan struct{})}, pw
	sb.stdout, sb.stderr = contract.NewCapped(sb.req.OutputLimit, nil), contract.NewCapped(sb.req.OutputLimit, nil)
	sb.stderr.HoldInitLine()
	if sb.session != nil && driverFirst(sb.req) {
		// Its first process is its interpreter, on the wire.
		return wireCreator(sb.runDir)
	}
	if sb.session != nil || sb.anchor {
		// Its first process only keeps it alive: a session's calls
		// bring their own streams.
		return cio.NullIO
	}
	if sb.standby != nil {
		// The run that claims it brings its streams.
		return fifosOnly(sb.runDir)
	}
	stdout, stderr := sb.maskOutput(sb.stdout, sb.stderr)
	return cio.NewCreator(cio.WithStreams(sb.stdin, stdout, stderr), cio.WithFIFODir(sb.runDir))
}

// deliver gives the sandbox its request's code, files and output settings.
// The program has not run yet: nothing it could see changes under it.
func (sb *sandbox) deliver(d contract.Delivery) error {
	if sb.state != stateCreated && sb.state != stateHeld {
		return &stateError{id: sb.id, from: sb.state, to: stateRunning}
	}
	if sb.req.Lang != "" {
		p, err := contract.LookupPreset(sb.req.Lang)
		if err != nil {
			return err
		}
		if err := box.WriteCode(sb.dirs.Code, p.File, d.Code, p.Support); err != nil {
			return err
		}
	}
	sb.stdout.Reset(d.OutputLimit, d.Stdout)
	sb.stderr.Reset(d.OutputLimit, d.Stderr)
	if sb.preloads() {
		if err := sb.removePreloadMarker(); err != nil {
			return err
		}
	}
	if sb.link != nil {
		if err := sb.startLink(d); err != nil {
			return err
		}
	}
	uid, gid := sb.hostIDs()
	if d.CopyIn != "" {
		if err := box.CopyIn(d.CopyIn, sb.dirs.Workspace, sb.req.TmpBytes, uid, gid); err != nil {
			return err
		}
	}
	return box.WriteFiles(sb.dirs.Workspace, d.Files, uid, gid)
}

// start lets the program run (the task starts, or the gate gets its line)
// and feeds it stdin.
func (sb *sandbox) start(ctx context.Context, stdin io.Reader) error {
	held := sb.state == stateHeld
	if err := sb.to(stateRunning, stateCreated, stateHeld); err != nil {
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
		if _, err := io.WriteString(sb.stdinW, "\n"); err != nil {
			return fmt.Errorf("starting sandbox: %w", err)
		}
	} else if err := sb.task.Start(opCtx); err != nil {
		// A shared shim killed under the start: the task is gone or the
		// connection closed (a runtime's own failure is neither, and does
		// not wait for memberLost).
		if (errdefs.IsNotFound(err) || errdefs.IsUnavailable(err) || strings.Contains(err.Error(), "closed")) && sb.memberLost() {
			return shimDiedError(err)
		}
		return &runtimeError{step: "starting sandbox", err: err}
	}
	go func() {
		if stdin != nil {
			_, _ = io.Copy(sb.stdinW, stdin)
		}
		sb.stdinW.Close()
	}()
	// The shim holds the stdin FIFO open: the program sees EOF only once
	// containerd is told that the input is over.
	go func() {
		select {
		case <-sb.stdin.EOF:
		case <-sb.gone:
			return
		}
		if err := sb.task.CloseIO(opCtx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debug("closing stdin")
		}
	}()
	return nil
}

// shimDiedError is a run's end when its shared shim died under it.
func shimDiedError(err error) error {
	return fmt.Errorf("the sandbox's shim died (it served other sandboxes too; the next run gets a new one): %w", err)
}

// exit is how the program ended and what it cost.
type exit struct {
	facts    contract.ExitFacts
	duration time.Duration
	stats    cgroups.Stats
}

// wait waits for the program to end, for the timeout (then the whole
// sandbox is killed: every process in its PID namespace) or for ctx (the
// same), and reads its figures from its cgroup before the task goes.
func (sb *sandbox) wait(ctx context.Context, timeout time.Duration) (exit, error) {
	var e exit
	if err := sb.to(stateExited, stateRunning); err != nil {
		return e, err
	}
	opCtx := context.WithoutCancel(ctx)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var status containerd.ExitStatus
	select {
	case status = <-sb.statusC:
	case <-timer.C:
		e.facts.TimedOut = true
	case <-ctx.Done():
		e.facts.Interrupted = true
	}
	if e.facts.TimedOut || e.facts.Interrupted {
		if err := sb.task.Kill(opCtx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Warn("killing sandbox")
		}
		select {
		case status = <-sb.statusC:
		case <-time.After(reaper.CleanupTimeout):
			return e, fmt.Errorf("sandbox %s did not exit after SIGKILL", sb.id)
		}
	}
	if err := status.Error(); err != nil {
		if sb.memberLost() {
			return e, shimDiedError(err)
		}
		return e, fmt.Errorf("waiting for sandbox exit: %w", err)
	}
	sb.ended = true
	end := time.Now()
	if t := status.ExitTime(); !t.IsZero() && t.After(sb.started) {
		end = t
	}
	e.duration = end.Sub(sb.started)
	e.facts.Status = status.ExitCode()
	stats, err := cgroups.ReadStats(sb.r.Cgroups, reaper.CgroupsPath(sb.r.Namespace, sb.id))
	if err != nil {
		log.G(ctx).WithError(err).Warn("reading sandbox cgroup")
	}
	stats.CPUTimeNs -= min(sb.cpuBefore, stats.CPUTimeNs)
	e.stats, e.facts.OOMKills = stats, stats.OOMKills
	err = sb.drain(opCtx)
	sb.flushMasks()
	return e, err
}
