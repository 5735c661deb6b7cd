package keeper

// A keeper's processes: starting one, its output, stdin, signals.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/procwire"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/secrets"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// pidWait is how long starting a process waits for boxer-init's line with
// its PID in the sandbox.
const pidWait = 10 * time.Second

// keptProcess is one of a keeper's processes.
type keptProcess struct {
	info contract.ProcessInfo // under the keeper's mu
	out  *ring
	// process is its containerd exec, or served its process server's
	// (keeper_served_linux.go).
	process containerd.Process
	served  *procwire.Process
	// stdin is its stdin's writing end while it is open; nil without.
	stdinMu sync.Mutex
	stdin   io.WriteCloser
	// pid is closed once info.PID is known (or it ended first).
	pid chan struct{}
	// size is its terminal's first size.
	size *contract.TermSize
	// masks hide the session's secrets in its output before the ring.
	masks []*secrets.Masker
}

// start starts req's command in the session and returns it once it runs.
func (k *keeper) start(req contract.ProcessRequest) (contract.ProcessInfo, error) {
	if err := req.Check(); err != nil {
		return contract.ProcessInfo{}, err
	}
	if k.server != nil {
		return k.startServed(req)
	}
	k.mu.Lock()
	if err := k.roomLocked(); err != nil {
		k.mu.Unlock()
		return contract.ProcessInfo{}, err
	}
	k.next++
	n := k.next
	p := &keptProcess{out: newRing(contract.DefaultRingBytes, chunkCost), pid: make(chan struct{}), size: req.PTY}
	p.info = contract.ProcessInfo{ID: n, Tag: req.Tag, Args: req.Args, Env: req.Env, Cwd: contract.Or(req.Cwd, k.spec.Process.Cwd), PTY: req.PTY != nil, Started: time.Now().UTC()}
	k.procs[n] = p
	k.mu.Unlock()

	proc := *k.spec.Process
	proc.Env = box.BuildEnv(k.spec.Process.Env, req.Env)
	proc.Args = append([]string{oci.InitPath, "-a", "--"}, WithSecretEnv(req.Args, k.secretEnv, proc.Env)...)
	proc.Cwd = p.info.Cwd
	var stdin io.Reader
	if req.Stdin || req.PTY != nil {
		pr, pw := io.Pipe()
		stdin, p.stdin = pr, pw
	}
	stdout := &pidLine{p: p, stream: contract.StreamStdout, k: k}
	opts := []cio.Opt{cio.WithFIFODir(filepath.Join(k.runDir, keeperFIFOs))}
	if req.PTY != nil {
		proc.Terminal = true
		proc.ConsoleSize = &specs.Box{Height: uint(req.PTY.Rows), Width: uint(req.PTY.Cols)}
		stdout.stream = contract.StreamPTY
		stdout.sink = p.mask(k.masks, ringWriter{p.out, contract.StreamPTY})
		opts = append(opts, cio.WithStreams(stdin, stdout, nil), cio.WithTerminal)
	} else {
		stdout.sink = p.mask(k.masks, ringWriter{p.out, contract.StreamStdout})
		opts = append(opts, cio.WithStreams(stdin, stdout, p.mask(k.masks, ringWriter{p.out, contract.StreamStderr})))
	}
	process, err := k.task.Exec(k.ctx, "proc-"+strconv.Itoa(n), &proc, cio.NewCreator(opts...))
	if err == nil {
		p.process = process
		err = k.run(p)
	}
	if err != nil {
		k.mu.Lock()
		delete(k.procs, n)
		k.mu.Unlock()
		if p.stdin != nil {
			p.stdin.Close()
		}
		return contract.ProcessInfo{}, &box.RuntimeError{Step: "starting a process in the session", Err: err}
	}
	_ = reaper.TouchSession(k.runDir, time.Now())
	select {
	case <-p.pid:
	case <-time.After(pidWait):
	}
	return k.info(p), nil
}

// roomLocked forgets the oldest ended process when the keeper tracks
// MaxProcesses, and refuses a new one when they all run.
func (k *keeper) roomLocked() error {
	if len(k.procs) < contract.MaxProcesses {
		return nil
	}
	ids := make([]int, 0, len(k.procs))
	for id, p := range k.procs {
		if !p.info.Running {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return contract.FieldErr(contract.FieldArgs, "cannot start: %d processes run in the session, the most it keeps; end one first", contract.MaxProcesses)
	}
	delete(k.procs, slices.Min(ids))
	return nil
}

// run starts p's process and watches for its end: then its status is
// recorded, its output closed, and containerd forgets it.
func (k *keeper) run(p *keptProcess) error {
	statusC, err := p.process.Wait(k.ctx)
	if err != nil {
		return err
	}
	if err := p.process.Start(k.ctx); err != nil {
		_, _ = p.process.Delete(k.ctx, containerd.WithProcessKill)
		return err
	}
	k.mu.Lock()
	p.info.Running = true
	k.mu.Unlock()
	if p.size != nil {
		// runsc does not take the size from the process's spec.
		if err := p.process.Resize(k.ctx, p.size.Cols, p.size.Rows); err != nil {
			log.G(k.ctx).WithError(err).Debug("sizing a terminal")
		}
	}
	go func() {
		st := <-statusC
		drainProcess(p.process)
		code := int(st.ExitCode())
		k.mu.Lock()
		p.info.Running, p.info.ExitCode, p.info.Ended = false, &code, st.ExitTime().UTC()
		if st.Error() != nil {
			p.info.Error = st.Error().Error()
		}
		k.mu.Unlock()
		p.closeStdin(k.ctx)
		p.seenPID()
		for _, m := range p.masks {
			_ = m.Flush()
		}
		p.out.close()
		if _, err := p.process.Delete(context.WithoutCancel(k.ctx)); err != nil && !errdefs.IsNotFound(err) {
			log.G(k.ctx).WithError(err).Debug("forgetting a process")
		}
		_ = reaper.TouchSession(k.runDir, time.Now())
	}()
	return nil
}

// drainProcess waits a while for the last of a process's output.
func drainProcess(process containerd.Process) {
	done := make(chan struct{})
	go func() {
		process.IO().Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(box.DrainTimeout):
		process.IO().Cancel()
	}
	process.IO().Close()
}

func (p *keptProcess) seenPID() {
	select {
	case <-p.pid:
	default:
		close(p.pid)
	}
}

// signal sends sig to p: on runc from the host (signalFromHost), under
// gVisor from inside the sandbox, through boxer-init -k, as a signal from
// the host reaches only runsc's exec process.
func (k *keeper) signal(p *keptProcess, sig unix.Signal) error {
	info := k.info(p)
	if !info.Running {
		return contract.FieldErr(contract.FieldSignal, "cannot be sent: process %d has ended (exit code %d)", info.ID, *info.ExitCode)
	}
	if p.served != nil {
		// To its group for a SIGKILL, as below: what it started ends too.
		if err := p.served.Signal(sig, sig == unix.SIGKILL); err != nil {
			return fmt.Errorf("signalling process %d: %w", info.ID, err)
		}
		return nil
	}
	if k.runtime != "runsc" {
		return k.signalFromHost(p, info, sig)
	}
	if info.PID <= 1 {
		return fmt.Errorf("process %d has not said its PID yet: try again", info.ID)
	}
	proc := *k.spec.Process
	proc.Args = []string{oci.InitPath, "-k", strconv.Itoa(int(sig)), strconv.Itoa(info.PID)}
	proc.Terminal = false
	var stderr bytes.Buffer
	kp, err := k.task.Exec(k.ctx, "kill-"+strconv.FormatInt(time.Now().UnixNano(), 36), &proc, cio.NewCreator(cio.WithStreams(nil, io.Discard, &stderr)))
	if err != nil {
		return &box.RuntimeError{Step: "signalling a process", Err: err}
	}
	defer kp.Delete(context.WithoutCancel(k.ctx), containerd.WithProcessKill)
	statusC, err := kp.Wait(k.ctx)
	if err != nil {
		return err
	}
	if err := kp.Start(k.ctx); err != nil {
		return &box.RuntimeError{Step: "signalling a process", Err: err}
	}
	select {
	case st := <-statusC:
		kp.IO().Wait()
		if st.ExitCode() != 0 && k.info(p).Running {
			return fmt.Errorf("signalling process %d: %s", info.ID, bytes.TrimSpace(stderr.Bytes()))
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("signalling process %d: no answer from the sandbox", info.ID)
	}
	return nil
}

// sendStdin copies r to p's stdin, then closes it if asked.
func (p *keptProcess) sendStdin(ctx context.Context, r io.Reader, close bool) error {
	p.stdinMu.Lock()
	w := p.stdin
	p.stdinMu.Unlock()
	if w == nil {
		return contract.FieldErr("stdin", "is closed: start the process with stdin to send it input")
	}
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("writing to stdin: %w", err)
	}
	if close {
		p.closeStdin(ctx)
	}
	return nil
}

// closeStdin ends p's stdin: the process reads end of file.
func (p *keptProcess) closeStdin(ctx context.Context) {
	p.stdinMu.Lock()
	w := p.stdin
	p.stdin = nil
	p.stdinMu.Unlock()
	if w == nil {
		return
	}
	w.Close()
	if p.process == nil {
		return
	}
	if err := p.process.CloseIO(context.WithoutCancel(ctx), containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
		log.G(ctx).WithError(err).Debug("closing stdin")
	}
}

// resize changes the size of p's terminal.
func (p *keptProcess) resize(ctx context.Context, size contract.TermSize) error {
	if !p.info.PTY {
		return contract.FieldErr(contract.FieldPTY, "cannot be resized: the process has no terminal")
	}
	if size.Cols == 0 || size.Rows == 0 || size.Cols > 1000 || size.Rows > 1000 {
		return contract.FieldErr(contract.FieldPTY, "size must be 1-1000 columns and rows, got %dx%d", size.Cols, size.Rows)
	}
	if p.served == nil && p.process == nil {
		return contract.FieldErr(contract.FieldPTY, "cannot be resized: process %d never started", p.info.ID)
	}
	if p.served != nil {
		return p.served.Resize(procwire.Size{Rows: uint16(size.Rows), Cols: uint16(size.Cols)})
	}
	return p.process.Resize(ctx, size.Cols, size.Rows)
}

// mask returns w behind a mask of the session's secrets, flushed at p's
// end; w itself without secrets.
func (p *keptProcess) mask(masks []secrets.Named, w io.Writer) io.Writer {
	if len(masks) == 0 {
		return w
	}
	m := secrets.NewMasker(w, masks)
	p.masks = append(p.masks, m)
	return m
}

// ringWriter writes a stream into a ring.
type ringWriter struct {
	r      *ring
	stream string
}

func (w ringWriter) Write(b []byte) (int, error) {
	w.r.write(w.stream, b)
	return len(b), nil
}

// pidLine is a process's stdout: it takes boxer-init's first line, with
// the process's PID in the sandbox, and passes the rest to the ring.
type pidLine struct {
	k      *keeper
	p      *keptProcess
	stream string
	// sink takes the rest: the ring, behind the masks.
	sink io.Writer
	head []byte
	done bool
}

const pidPrefix = "boxer-init: pid "

func (w *pidLine) Write(b []byte) (int, error) {
	if w.done {
		return w.sink.Write(b)
	}
	n := len(b)
	w.head = append(w.head, b...)
	i := bytes.IndexByte(w.head, '\n')
	if i < 0 && len(w.head) < 64 {
		return n, nil
	}
	w.done = true
	rest := w.head
	if i >= 0 && bytes.HasPrefix(w.head, []byte(pidPrefix)) {
		line := bytes.TrimRight(w.head[len(pidPrefix):i], "\r")
		if pid, err := strconv.Atoi(string(line)); err == nil {
			w.k.mu.Lock()
			w.p.info.PID = pid
			w.k.mu.Unlock()
		}
		rest = w.head[i+1:]
	}
	w.head = nil
	w.p.seenPID()
	_, err := w.sink.Write(rest)
	return n, err
}
