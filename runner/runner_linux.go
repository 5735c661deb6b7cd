package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/seccomp"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// Labels on every sandbox container, so that leftovers of a boxer killed
// with SIGKILL can be found and reaped.
const (
	LabelSandbox = "boxer.sandbox"
	LabelOwner   = "boxer.owner"
)

// runcShim is containerd's runc shim, the runtime of every runc sandbox.
const runcShim = "io.containerd.runc.v2"

// cleanupTimeout bounds the teardown of a sandbox, which must not use the
// caller's (possibly cancelled) context.
const cleanupTimeout = 15 * time.Second

// Options say how a Runner reaches containerd.
type Options struct {
	// Address of containerd; empty means the embedded default (see daemon).
	Address string
	// Namespace keeps boxer's objects apart; default "boxer".
	Namespace string
	// Daemon locates boxer's state and the private containerd.
	Daemon daemon.Config
	// Progress hears about slow steps (starting containerd); may be nil.
	Progress io.Writer
}

// Runner runs sandboxes on one containerd.
type Runner struct {
	client    *containerd.Client
	address   string
	namespace string
	stateDir  string
	runsDir   string
	cgroups   cgroups.Mode
	nofile    uint64
	owner     string
	reaped    chan struct{}
	// shim is the runtime for containerd: io.containerd.runc.v2, or the
	// path of boxer's wrapper around it (see shimScript).
	shim string
	// realShim is the runc shim's binary and bundlesDir containerd's task
	// bundles, where known (boxer's private daemon): for the reaper's sweep.
	realShim   string
	bundlesDir string
	pool       *pool
	cleanups   sync.WaitGroup
}

// New connects to containerd (starting boxer's private one if needed) and
// starts reaping sandboxes left behind by boxer processes that died.
func New(ctx context.Context, o Options) (*Runner, error) {
	if o.Namespace == "" {
		o.Namespace = "boxer"
	}
	address, err := daemon.Resolve(ctx, o.Daemon, o.Address, o.Progress)
	if err != nil {
		return nil, err
	}
	client, err := containerd.New(address, containerd.WithDefaultNamespace(o.Namespace), containerd.WithTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	r := &Runner{
		client:    client,
		address:   address,
		namespace: o.Namespace,
		stateDir:  o.Daemon.State,
		runsDir:   filepath.Join(o.Daemon.State, "runs"),
		cgroups:   cgroups.DetectMode(),
		nofile:    nofileLimit(),
		owner:     selfOwner(),
		reaped:    make(chan struct{}),
		shim:      runcShim,
	}
	if address == o.Daemon.Address() {
		r.bundlesDir = filepath.Join(o.Daemon.ContainerdState(), taskBundles)
		r.realShim, _ = o.Daemon.RuncShimPath()
		r.useShimWrapper(ctx)
	}
	go func() {
		defer close(r.reaped)
		r.reap(context.WithoutCancel(ctx))
	}()
	return r, nil
}

// useShimWrapper runs the private daemon's sandboxes through shimScript when
// that daemon is containerd 2.x (the version that re-runs the shim's delete).
// Without it everything works the same, only slower.
func (r *Runner) useShimWrapper(ctx context.Context) {
	v, err := r.client.Version(ctx)
	if err != nil || !strings.HasPrefix(strings.TrimPrefix(v.Version, "v"), "2.") || r.realShim == "" {
		return
	}
	if p, err := r.shimWrapper(r.realShim); err == nil {
		r.shim = p
	} else {
		log.G(ctx).WithError(err).Warn("using containerd's runc shim as is")
	}
}

// Client is the containerd client, for image management.
func (r *Runner) Client() *containerd.Client { return r.client }

// Address is the containerd socket in use.
func (r *Runner) Address() string { return r.address }

// Close removes the warm sandboxes, waits for the reaper and closes the
// connection.
func (r *Runner) Close() error {
	r.closePool()
	r.cleanups.Wait()
	<-r.reaped
	return r.client.Close()
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

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "bx-" + hex.EncodeToString(b)
}

// plan is a validated request, ready to run.
type plan struct {
	image   string
	args    []string
	env     []string
	code    []byte
	file    string
	support map[string]string
	limits  oci.Limits
	req     Request
}

func (r *Runner) plan(req Request) (plan, error) {
	p := plan{req: req}
	if req.Timeout == 0 {
		req.Timeout = DefaultTimeout
	}
	if req.MemoryBytes == 0 {
		req.MemoryBytes = DefaultMemory
	}
	if req.CPUs == 0 {
		req.CPUs = DefaultCPUs
	}
	if req.Pids == 0 {
		req.Pids = DefaultPids
	}
	if req.TmpBytes == 0 {
		req.TmpBytes = DefaultTmpSize
	}
	if req.OutputLimit == 0 {
		req.OutputLimit = DefaultOutputLimit
	}
	if !req.UserSet {
		req.UID, req.GID = DefaultUID, DefaultGID
	}
	if req.Runtime == "" {
		req.Runtime = DefaultRuntime
	}
	if req.Network == "" {
		req.Network = DefaultNetwork
	}
	switch {
	case req.Timeout < 0:
		return p, invalid("--timeout must be positive")
	case req.MemoryBytes < 6<<20:
		// runc itself needs a few MiB to start the container.
		return p, invalid("--memory must be at least 6MiB")
	case req.CPUs < 0.01:
		return p, invalid("--cpus must be at least 0.01")
	case req.Pids < 1:
		return p, invalid("--pids must be at least 1")
	case req.TmpBytes < 0:
		return p, invalid("--tmp-size must be positive")
	case req.OutputLimit < 0:
		return p, invalid("--output-limit must not be negative")
	}
	if req.Runtime != "runc" && req.Runtime != "runsc" {
		return p, invalid(fmt.Sprintf("--runtime %q: use runc or runsc", req.Runtime))
	}
	if req.Network != "none" {
		return p, invalid(fmt.Sprintf("--network %q is not supported: sandboxes have no network (none)", req.Network))
	}
	for _, kv := range req.Env {
		if err := validEnv(kv); err != nil {
			return p, err
		}
	}
	if req.CopyOut != "" {
		if st, err := os.Stat(req.CopyOut); err == nil && !st.IsDir() {
			return p, invalid(fmt.Sprintf("--copy-out %s: exists and is not a directory", req.CopyOut))
		}
	}
	if req.CopyIn != "" {
		if st, err := os.Stat(req.CopyIn); err != nil || !st.IsDir() {
			return p, invalid(fmt.Sprintf("--copy-in %s: not a directory", req.CopyIn))
		}
	}
	var filesSize int64
	for name, data := range req.Files {
		if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
			return p, invalid(fmt.Sprintf("files: %q must be a relative path inside /workspace", name))
		}
		filesSize += int64(len(data))
	}
	if filesSize > req.TmpBytes {
		return p, invalid(fmt.Sprintf("files: %d bytes do not fit in the workspace (%d): raise tmp_size", filesSize, req.TmpBytes))
	}
	if req.Lang != "" {
		preset, ok := Presets[req.Lang]
		if !ok {
			return p, invalid(fmt.Sprintf("unknown language %q: use one of %s", req.Lang, strings.Join(PresetNames(), ", ")))
		}
		if len(req.Args) > 0 {
			return p, invalid("--lang runs code from -c, -f or stdin; a command after -- needs --image instead")
		}
		p.image = preset.Image
		p.args = preset.Args()
		p.env = preset.Env
		p.code = req.Code
		p.file = preset.File
		p.support = preset.Support
	} else {
		if req.Image == "" || len(req.Args) == 0 {
			return p, invalid("nothing to run: give --lang with code, or --image REF -- COMMAND")
		}
		p.args = req.Args
	}
	if req.Image != "" {
		p.image = req.Image
	}
	p.limits = oci.Limits{
		MemoryBytes: req.MemoryBytes,
		CPUs:        req.CPUs,
		Pids:        req.Pids,
		TmpBytes:    req.TmpBytes,
		NoFile:      r.nofile,
	}
	p.req = req
	return p, nil
}

func invalid(msg string) error { return fmt.Errorf("%w: %s", ErrInvalid, msg) }

func validEnv(kv string) error {
	k, _, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return invalid(fmt.Sprintf("--env %q: want NAME=VALUE", kv))
	}
	for i, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return invalid(fmt.Sprintf("--env %q: %q is not a valid variable name", kv, k))
		}
	}
	return nil
}

// Run runs req in a fresh sandbox and removes every trace of it before
// returning. A non-nil error means boxer could not run the sandbox (exit 125)
// or was interrupted; the program's own failures are in the Result.
func (r *Runner) Run(ctx context.Context, req Request) (res Result, retErr error) {
	res = Result{ID: newID(), Status: StatusError, ExitCode: ExitBoxer, Runtime: req.Runtime, Image: req.Image}
	defer func() {
		if retErr != nil {
			res.Error = retErr.Error()
		}
	}()
	p, err := r.plan(req)
	if err != nil {
		return res, err
	}
	res.Runtime, res.Image = p.req.Runtime, p.image
	if err := cgroups.Check(r.cgroups); err != nil {
		return res, err
	}
	rootfs, err := snapshots.Resolve(ctx, r.client, p.image)
	if errors.Is(err, snapshots.ErrImageNotFound) {
		if req.Lang != "" && req.Image == "" {
			return res, &imageError{fmt.Sprintf("image %s not found: run 'boxer setup --lang %s'", p.image, req.Lang)}
		}
		return res, &imageError{fmt.Sprintf("image %s not found: build it with 'boxer image build' or see 'boxer image ls'", p.image)}
	} else if err != nil {
		return res, err
	}
	if r.pool != nil {
		r.pool.enter()
		defer r.pool.leave()
	}
	if sb := r.take(ctx, p); sb != nil {
		return r.runWarm(ctx, res, sb, p)
	}
	return r.run(ctx, res, p, rootfs)
}

// runWarm runs p in a warm sandbox and returns as soon as the result is
// complete; the sandbox is torn down right after, in the background, and
// Close waits for that.
func (r *Runner) runWarm(ctx context.Context, res Result, sb *sandbox, p plan) (Result, error) {
	res, err := r.execute(ctx, res, sb, p)
	r.cleanups.Add(1)
	go func() {
		defer r.cleanups.Done()
		if r.pool.pending.Add(1) <= maxPendingTeardowns {
			r.pool.settle(r.pool.ctx, func() bool { return false })
		}
		defer r.pool.pending.Add(-1)
		if err := sb.destroy(ctx); err != nil {
			log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.id)
		}
	}()
	return res, err
}

func (r *Runner) run(ctx context.Context, res Result, p plan, rootfs snapshots.Rootfs) (_ Result, retErr error) {
	sb, err := r.prepare(ctx, res.ID, p, rootfs, false)
	if err != nil {
		return execFailure(res, err)
	}
	defer func() {
		if err := sb.destroy(ctx); err != nil {
			// An interrupted run says so, and what could not be removed.
			retErr = errors.Join(retErr, err)
		}
	}()
	if ctx.Err() != nil {
		return res, ErrInterrupted
	}
	return r.execute(ctx, res, sb, p)
}

// sandbox is one container whose task is created (runc create has run: the
// namespaces, mounts and cgroup exist) and, unless gated, not yet started.
type sandbox struct {
	id        string
	runDir    string
	codeDir   string
	workspace string // a host tmpfs bound at /workspace, or ""
	limits    oci.Limits
	container containerd.Container
	task      containerd.Task
	statusC   <-chan containerd.ExitStatus
	stdout    *capped
	stderr    *capped
	stdin     *eofReader     // nil: empty stdin
	stdinW    *io.PipeWriter // warm sandboxes: the request's stdin goes here
	// cgroup is the sandbox's cgroup path, removed last if a runtime left it.
	cgroup      string
	cgroupsMode cgroups.Mode
	// gated: the task runs a gate that waits for one line on stdin before it
	// becomes the program (warm sandboxes, see gated).
	gated bool
	// lateCleanup leaves the task's deletion to destroy, so that a result
	// can be answered before the sandbox is torn down (warm sandboxes of
	// the server; the CLI always tears down first).
	lateCleanup bool
}

// waitIO waits up to d for the task's output to be fully copied out.
func waitIO(task containerd.Task, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		task.IO().Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// prepare creates a sandbox for p. A warm sandbox is made before its request
// is known: its code directory and workspace are empty, ready to be filled,
// and its stdin is a pipe. On error, nothing of it is left.
func (r *Runner) prepare(ctx context.Context, id string, p plan, rootfs snapshots.Rootfs, warm bool) (_ *sandbox, retErr error) {
	sb := &sandbox{id: id, runDir: filepath.Join(r.runsDir, id), cgroup: cgroupsPath(r.namespace, id), cgroupsMode: r.cgroups}
	if err := os.MkdirAll(sb.runDir, 0o711); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	defer func() {
		if retErr != nil {
			if err := sb.destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", id)
			}
		}
	}()
	// Atomically: a concurrent boxer's reaper must never read it half-written
	// (an empty owner is a dead one) and remove this run's directory.
	if err := writeFileAtomic(filepath.Join(sb.runDir, "owner"), []byte(r.owner), 0o600); err != nil {
		return nil, fmt.Errorf("writing run owner: %w", err)
	}
	sb.limits = p.limits
	var extra []oci.SpecOpts
	if p.req.Runtime == "runsc" {
		// gVisor's own threads (Sentry, gofer, ptrace stubs) live in the
		// sandbox's cgroup: the host pids limit leaves room for them, and
		// the program's own cap is RLIMIT_NPROC, which gVisor counts per
		// sandbox (its kernel is the sandbox's alone).
		sb.limits.Pids = 2*sb.limits.Pids + runscPidsOverhead
		extra = append(extra, oci.WithRlimit("RLIMIT_NPROC", uint64(p.req.Pids)))
	}
	args, env := p.args, buildEnv(rootfs.Config.Env, p.env, p.req.Env)
	if warm {
		args = gated(args, env)
	}
	opts := []oci.SpecOpts{
		oci.WithHardenedBase,
		oci.WithProcess(args, env, oci.Workspace),
		oci.WithUser(p.req.UID, p.req.GID),
		oci.WithLimits(sb.limits),
		oci.WithCgroupsPath(cgroupsPath(r.namespace, id)),
	}
	opts = append(opts, extra...)
	if p.req.Seccomp != nil {
		opts = append(opts, oci.WithSeccomp(p.req.Seccomp))
	} else {
		opts = append(opts, oci.WithSeccomp(seccomp.DefaultProfile()))
	}
	if p.file != "" {
		sb.codeDir = filepath.Join(sb.runDir, "code")
		if warm {
			if err := os.Mkdir(sb.codeDir, 0o755); err != nil {
				return nil, fmt.Errorf("creating code directory: %w", err)
			}
		} else if err := writeCode(sb.codeDir, p.file, p.code, p.support); err != nil {
			return nil, err
		}
		opts = append(opts, oci.WithReadonlyBind(sb.codeDir, oci.CodeDir))
	}
	if warm || p.req.CopyIn != "" || p.req.CopyOut != "" || len(p.req.Files) > 0 {
		sb.workspace = filepath.Join(sb.runDir, "workspace")
		if err := mountWorkspace(sb.workspace, p.req.TmpBytes, p.req.UID, p.req.GID); err != nil {
			return nil, err
		}
		if !warm {
			if err := fillWorkspace(sb.workspace, p.req); err != nil {
				return nil, err
			}
		}
		opts = append(opts, oci.WithWorkspaceBind(sb.workspace))
	}
	spec, err := oci.New(ctx, id, opts...)
	if err != nil {
		return nil, fmt.Errorf("building spec: %w", err)
	}

	// Creation is not interrupted half-way: a cancelled RPC could leave an
	// object we do not know about. Cancellation is honoured between steps
	// and while the program runs.
	shim, shimOpts, err := r.runtime(p.req.Runtime)
	if err != nil {
		return nil, err
	}
	opCtx := context.WithoutCancel(ctx)
	sb.container, err = r.client.NewContainer(opCtx, id,
		containerd.WithSpec(spec),
		containerd.WithRuntime(shim, shimOpts),
		containerd.WithContainerLabels(map[string]string{LabelSandbox: "true", LabelOwner: r.owner}),
		withRootfs(rootfs),
	)
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}

	sb.stdout = newCapped(p.req.OutputLimit, p.req.Stdout)
	sb.stderr = newCapped(p.req.OutputLimit, p.req.Stderr)
	var in io.Reader
	switch {
	case warm:
		pr, pw := io.Pipe()
		sb.stdin, sb.stdinW = &eofReader{r: pr, eof: make(chan struct{})}, pw
		in = sb.stdin
	case p.req.Stdin != nil:
		sb.stdin = &eofReader{r: p.req.Stdin, eof: make(chan struct{})}
		in = sb.stdin
	}
	sb.task, err = sb.container.NewTask(opCtx, cio.NewCreator(cio.WithStreams(in, sb.stdout, sb.stderr), cio.WithFIFODir(sb.runDir)))
	if err != nil {
		return nil, fmt.Errorf("starting sandbox: %w", err)
	}
	// The runtime has set the cgroup up: check that the kernel enforces
	// what was asked before anything runs. Never run unlimited silently.
	if err := r.verifyLimits(id, sb.limits); err != nil {
		return nil, err
	}
	if sb.statusC, err = sb.task.Wait(opCtx); err != nil {
		return nil, fmt.Errorf("waiting on task: %w", err)
	}
	if warm {
		if err := sb.task.Start(opCtx); err != nil {
			return nil, fmt.Errorf("starting sandbox: %w", err)
		}
		sb.gated = true
	}
	return sb, nil
}

// gated wraps a warm sandbox's command so that it can be started before its
// request is known: a shell waits for one line on stdin, then replaces
// itself with the program (exec: the program is PID 1, nothing of the shell
// is left). dash exports PWD, which the program of a cold sandbox does not
// get, so the gate unsets it unless the sandbox's environment sets it.
func gated(args, env []string) []string {
	script := `read -r _ && unset PWD && exec "$@"`
	for _, kv := range env {
		if strings.HasPrefix(kv, "PWD=") {
			script = `read -r _ && exec "$@"`
		}
	}
	return append([]string{"/bin/sh", "-c", script, "sh"}, args...)
}

// destroy removes the sandbox's task, container and run directory, with a
// fresh bounded context: the caller's may be cancelled already.
func (sb *sandbox) destroy(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var errs []error
	if sb.stdinW != nil {
		sb.stdinW.Close()
	}
	if sb.container != nil {
		if err := destroy(cctx, sb.container); err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", sb.id, err))
		}
	}
	if err := removeRunDir(sb.runDir); err != nil {
		errs = append(errs, fmt.Errorf("removing run directory: %w", err))
	}
	if err := cgroups.Remove(sb.cgroupsMode, sb.cgroup); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// execute starts a prepared sandbox's program, waits for it to end (or for
// the timeout, or for ctx) and collects the result. The caller destroys the
// sandbox.
func (r *Runner) execute(ctx context.Context, res Result, sb *sandbox, p plan) (Result, error) {
	opCtx := context.WithoutCancel(ctx)
	waitCtx, stopWait := context.WithCancel(opCtx)
	defer stopWait()
	start := time.Now()
	if sb.gated {
		// A warm sandbox runs its gate already: one line lets the program go.
		if _, err := io.WriteString(sb.stdinW, "\n"); err != nil {
			return execFailure(res, fmt.Errorf("starting sandbox: %w", err))
		}
	} else if err := sb.task.Start(opCtx); err != nil {
		return execFailure(res, fmt.Errorf("starting sandbox: %w", err))
	}
	if sb.stdinW != nil {
		go func() {
			if p.req.Stdin != nil {
				_, _ = io.Copy(sb.stdinW, p.req.Stdin)
			}
			sb.stdinW.Close()
		}()
	}
	if sb.stdin != nil {
		// The shim holds the stdin FIFO open: the program sees EOF only once
		// containerd is told that the input is over.
		go func() {
			select {
			case <-sb.stdin.eof:
				if err := sb.task.CloseIO(opCtx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
					log.G(ctx).WithError(err).Debug("closing stdin")
				}
			case <-waitCtx.Done():
			}
		}()
	}

	timer := time.NewTimer(p.req.Timeout)
	defer timer.Stop()
	var timedOut, interrupted bool
	var status containerd.ExitStatus
	select {
	case status = <-sb.statusC:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		interrupted = true
	}
	if timedOut || interrupted {
		// The whole sandbox goes: every process in its PID namespace.
		if err := sb.task.Kill(opCtx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Warn("killing sandbox")
		}
		select {
		case status = <-sb.statusC:
		case <-time.After(cleanupTimeout):
			return res, fmt.Errorf("sandbox %s did not exit after SIGKILL", sb.id)
		}
	}
	end := time.Now()
	if !status.ExitTime().IsZero() && status.ExitTime().After(start) {
		end = status.ExitTime()
	}
	res.DurationMs = float64(end.Sub(start).Microseconds()) / 1000

	// The cgroup goes with the task: read its figures first.
	stats, err := cgroups.ReadStats(r.cgroups, cgroupsPath(r.namespace, sb.id))
	if err != nil {
		log.G(ctx).WithError(err).Warn("reading sandbox cgroup")
	}
	res.MemoryPeakBytes = stats.MemoryPeakBytes
	res.CPUTimeMs = float64(stats.CPUTimeNs/1000) / 1000

	// The output is complete once the shim has copied the last of it and
	// closed the FIFOs, which it does when the process is gone. With
	// lateCleanup the task's deletion waits for destroy, after the result.
	if !sb.lateCleanup || !waitIO(sb.task, time.Second) {
		// Delete waits for the output to be copied out, then removes the
		// task. The process has exited: no kill first (runsc would say it
		// cannot).
		dctx, cancel := context.WithTimeout(opCtx, cleanupTimeout)
		_, err = sb.task.Delete(dctx)
		cancel()
		if err != nil && !errdefs.IsNotFound(err) {
			return res, fmt.Errorf("deleting task: %w", err)
		}
	}
	res.Stdout, res.StdoutTruncated = sb.stdout.text()
	res.Stderr, res.StderrTruncated = sb.stderr.text()
	var copyErr error
	if p.req.CopyOut != "" && !interrupted {
		// After a timeout or an OOM kill too: what was written is there.
		res.FilesOut, res.FilesSkipped, copyErr = copyOut(sb.workspace, p.req.CopyOut, p.req.TmpBytes)
		if res.FilesOut == nil {
			res.FilesOut = []File{}
		}
	}

	code := int(status.ExitCode())
	if err := status.Error(); err != nil {
		return res, fmt.Errorf("waiting for sandbox exit: %w", err)
	}
	res.ExitCode = code
	res.Status = StatusExited
	if code > 128 && code <= 128+64 {
		// The shim reports a death by signal N as 128+N, like a shell.
		res.Signal = unix.SignalName(syscall.Signal(code - 128))
		res.Status = StatusKilled
	}
	switch {
	case interrupted:
		res.Status = StatusKilled
		return res, ErrInterrupted
	case timedOut:
		res.Status, res.ExitCode = StatusTimeout, ExitTimeout
	case stats.OOMKills > 0 && code == ExitOOM:
		res.Status = StatusOOM
	}
	return res, copyErr
}

func (r *Runner) verifyLimits(id string, l oci.Limits) error {
	quota, period := l.CPUQuota()
	want := cgroups.Limits{MemoryBytes: uint64(l.MemoryBytes), CPUQuotaUs: quota, CPUPeriodUs: period, Pids: uint64(l.Pids)}
	got, err := cgroups.ReadLimits(r.cgroups, cgroupsPath(r.namespace, id))
	if err == nil {
		err = cgroups.Verify(got, want)
	}
	if err != nil {
		return fmt.Errorf("this host's cgroups do not enforce the sandbox's limits (%v): run 'boxer doctor'", err)
	}
	return nil
}

// execFailure turns a runtime's failure to start the program into docker's
// 126 (cannot execute) or 127 (not found); other failures are boxer's (125).
func execFailure(res Result, err error) (Result, error) {
	// runc and runsc report these only as text through containerd's gRPC:
	// there is no typed error to test, so match their exec errors, as docker
	// does. runc: `exec: "x": executable file not found in $PATH`; runsc:
	// `error finding executable "x" in PATH [...]` and `failed to load /x: ...`.
	msg := err.Error()
	i := -1
	for _, marker := range []string{"exec: ", "error finding executable ", "failed to load "} {
		if i = strings.Index(msg, marker); i >= 0 {
			break
		}
	}
	if i < 0 && !strings.Contains(msg, "exec format error") {
		return res, err
	}
	detail := msg
	if i >= 0 {
		detail = strings.TrimSuffix(msg[i:], ": unknown")
	}
	switch {
	case strings.Contains(msg, "not found") || strings.Contains(msg, "no such file or directory"):
		res.ExitCode, res.Error = ExitNotFound, detail
		return res, nil
	case strings.Contains(msg, "permission denied") || strings.Contains(msg, "exec format error") || strings.Contains(msg, "is a directory"):
		res.ExitCode, res.Error = ExitCannotExec, detail
		return res, nil
	}
	return res, err
}

// destroy removes the container's task (killing what still runs) and the
// container, tolerating either being gone already.
func destroy(ctx context.Context, c containerd.Container) error {
	var errs []error
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx); errdefs.IsFailedPrecondition(err) {
			// Still running, or created and never started: kill everything
			// in it, wait, delete.
			if statusC, werr := task.Wait(ctx); werr == nil {
				if st, err := task.Status(ctx); err == nil && st.Status == containerd.Created && task.Pid() > 0 {
					// Never started: runsc cannot signal a container with no
					// process yet, and its task's process — the sandbox's
					// own, a child of the shim, unreaped until it exits — is
					// ours to end (for runc it is runc init).
					_ = unix.Kill(int(task.Pid()), unix.SIGKILL)
				} else {
					_ = task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll)
				}
				select {
				case <-statusC:
				case <-ctx.Done():
				}
			}
			_, err = task.Delete(ctx)
		}
		if err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting task: %w", err))
		}
	} else if !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("loading task: %w", err))
	}
	if err := c.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting container: %w", err))
	}
	return errors.Join(errs...)
}

// withRootfs points the container at the image's shared read-only view
// without the extra round trip containerd.WithSnapshot makes.
func withRootfs(r snapshots.Rootfs) containerd.NewContainerOpts {
	return func(_ context.Context, _ *containerd.Client, c *containers.Container) error {
		c.Snapshotter = r.Snapshotter
		c.SnapshotKey = r.Key
		c.Image = r.Image
		return nil
	}
}

func cgroupsPath(namespace, id string) string {
	return "/boxer/" + namespace + "/" + id
}

// buildEnv merges environments, later entries replacing earlier ones by name.
func buildEnv(layers ...[]string) []string {
	var out []string
	index := map[string]int{}
	for _, layer := range layers {
		for _, kv := range layer {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := index[k]; ok {
				out[i] = kv
				continue
			}
			index[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// writeCode writes the program read-only into dir, which is bind-mounted
// read-only into the sandbox.
func writeCode(dir, file string, code []byte, support map[string]string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("creating code directory: %w", err)
	}
	for name, content := range support {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	// 0644, root's: even a sandbox running as uid 0 (without capabilities)
	// meets the read-only mount, not just a permission bit.
	if err := os.WriteFile(filepath.Join(dir, file), code, 0o644); err != nil {
		return fmt.Errorf("writing code: %w", err)
	}
	return os.Chmod(dir, 0o555)
}

// selfOwner identifies this process across PID reuse: pid and start time.
func selfOwner() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + ":" + processStart(pid)
}

// processStart is field 22 of /proc/PID/stat, the start time in clock ticks.
func processStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerAlive reports whether the process named by an owner label still runs.
func ownerAlive(owner string) bool {
	pidStr, start, ok := strings.Cut(owner, ":")
	pid, err := strconv.Atoi(pidStr)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	return processStart(pid) == start && start != ""
}

// imageError says which image is missing and what to run; errors.Is finds
// ErrImageNotFound in it.
type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }
func (e *imageError) Unwrap() error { return ErrImageNotFound }

// Health says whether containerd answers and which presets' images are there.
type Health struct {
	OK         bool            `json:"ok"`
	Containerd string          `json:"containerd"`
	Images     map[string]bool `json:"images"`
}

// Health checks containerd and the presets' images.
func (r *Runner) Health(ctx context.Context) Health {
	h := Health{Images: map[string]bool{}}
	v, err := r.client.Version(ctx)
	if err != nil {
		h.Containerd = "unreachable: " + err.Error()
		return h
	}
	h.Containerd = v.Version
	h.OK = true
	for _, name := range PresetNames() {
		_, err := r.client.ImageService().Get(ctx, Presets[name].Image)
		h.Images[name] = err == nil
		h.OK = h.OK && err == nil
	}
	return h
}
