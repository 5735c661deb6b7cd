package keeper

// A keeper's processes through the session's process server, boxer-procd.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/procwire"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// A session made with a process server runs boxer-procd as its first
// program, under boxer-init (which ends the sandbox at the backstop), and
// its keeper starts the session's processes through it: a fork in the
// sandbox and a round trip on a pipe, not a containerd exec. The channel
// is the first program's streams, two FIFOs in the session's run
// directory, which only root on the host reaches, as the wire's
// (session_wire_linux.go): the shim holds them, so a keeper that dies
// leaves the server and its processes running, and the next one says
// hello again and takes them over (procwire's resync). boxer-procd's
// stderr is its stdin's FIFO, held open and never written (-q), so that
// its stdin does not end when a keeper closes its end.
const (
	// ServerIn and ServerOut are the process server's FIFOs in a
	// session's run directory.
	ServerIn  = "procd-in"
	ServerOut = "procd-out"
	// ServerName is boxer-procd's file name on the host (init/boxer-procd.c),
	// ServerPath its path in the sandbox's read-only /code.
	ServerName = "boxer-procd"
	ServerPath = oci.CodeDir + "/.boxer-procd"
	// serverHello is how long a keeper waits for the server's hello-reply.
	serverHello = 10 * time.Second
	// goneExit is the exit code of a process whose server's channel
	// ended before its exit came: the server ended, and the sandbox with
	// it (its PID 1 exits once the server does, and the kernel kills
	// what is left), or the keeper killed the sandbox. SIGKILL's, as a
	// container exec's in a sandbox killed under it.
	goneExit = 128 + 9
)

// ServerArgs is the first program of a session with a process server,
// ended after secs seconds: its backstop.
func ServerArgs(secs string) []string {
	return []string{oci.InitPath, "-t", secs, "--", ServerPath, "-q"}
}

// ServerCreator makes the process server's FIFOs as WireCreator makes the
// wire's.
func ServerCreator(runDir string) cio.Creator { return fifoCreator(runDir, ServerIn, ServerOut) }

// RemoveFIFOs removes the first program's FIFOs (the wire's, the process
// server's) of a task that has ended, for the next one (a restore) to
// make anew.
func RemoveFIFOs(runDir string) error {
	var errs []error
	for _, f := range []string{WireIn, WireOut, ServerIn, ServerOut} {
		if err := os.Remove(filepath.Join(runDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CopyNotes copies what a keeper noted of its processes (note, and which
// is the driver) from one session's run directory into a fork's, whose
// keeper takes them over.
func CopyNotes(fromRunDir, toRunDir string) error {
	from, to := filepath.Join(fromRunDir, keeperFIFOs), filepath.Join(toRunDir, keeperFIFOs)
	entries, err := os.ReadDir(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if err := os.Mkdir(to, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	for _, e := range entries {
		note := strings.HasPrefix(e.Name(), "proc-") && (strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".out")) || e.Name() == driverNote
		if !e.Type().IsRegular() || !note {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil || len(b) > maxOutImage {
			continue // it ended meanwhile
		}
		if err := reaper.WriteFileAtomic(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// connectServer opens the session's process server and says hello: the
// processes it holds (a dead keeper's) are this keeper's from now on.
func (k *keeper) connectServer() error {
	in, err := os.OpenFile(filepath.Join(k.runDir, ServerIn), os.O_WRONLY|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENXIO) || errors.Is(err, os.ErrNotExist) {
		return errors.New("the session's process server is not running")
	} else if err != nil {
		return fmt.Errorf("opening the session's process server: %w", err)
	}
	if err := checkFIFO(in); err != nil {
		in.Close()
		return err
	}
	out, err := os.OpenFile(filepath.Join(k.runDir, ServerOut), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err == nil {
		if err = checkFIFO(out); err != nil {
			out.Close()
		}
	}
	if err != nil {
		in.Close()
		return fmt.Errorf("opening the session's process server: %w", err)
	}
	c := procwire.New(out, in, procwire.Limits{MaxProcs: contract.MaxProcesses})
	ctx, cancel := context.WithTimeout(k.ctx, serverHello)
	held, err := c.Hello(ctx)
	cancel()
	if err != nil {
		in.Close()
		out.Close()
		return fmt.Errorf("the session's process server: %w", err)
	}
	k.server = c
	for _, sp := range held {
		if k.isDriver(sp) {
			k.relay(sp)
		} else {
			k.adopt(sp)
		}
	}
	go k.watchServer(c, in, out)
	return nil
}

// watchServer waits for the channel to break. The server's end (it
// exited: the sandbox ends with it) needs nothing more; a server that
// broke the protocol (a program in the sandbox writing to its output)
// cannot be trusted with the session's processes, and the sandbox is
// ended: the session's next command says why.
func (k *keeper) watchServer(c *procwire.Client, in, out *os.File) {
	select {
	case <-c.Broken():
	case <-k.ctx.Done():
		c.Close()
	}
	in.Close()
	out.Close()
	err := c.Err()
	var pe *procwire.ProtocolError
	if !errors.As(err, &pe) {
		return
	}
	log.G(k.ctx).WithError(err).Warnf("session %s: its process server broke its channel: ending the session", k.id)
	if kerr := k.task.Kill(context.WithoutCancel(k.ctx), unix.SIGKILL); kerr != nil {
		log.G(k.ctx).WithError(kerr).Warnf("session %s: ending its sandbox", k.id)
	}
}

// startServed starts req's command through the process server.
func (k *keeper) startServed(req contract.ProcessRequest) (contract.ProcessInfo, error) {
	k.startMu.Lock()
	defer k.startMu.Unlock()
	k.mu.Lock()
	err := k.roomLocked()
	k.mu.Unlock()
	if err != nil {
		return contract.ProcessInfo{}, err
	}
	env := box.BuildEnv(k.spec.Process.Env, req.Env)
	spec := procwire.Spec{Args: WithSecretEnv(req.Args, k.secretEnv, env), Env: env, Cwd: contract.Or(req.Cwd, k.spec.Process.Cwd), Stdin: req.Stdin || req.PTY != nil}
	if req.PTY != nil {
		spec.PTY = &procwire.Size{Rows: uint16(req.PTY.Rows), Cols: uint16(req.PTY.Cols)}
	}
	ctx, cancel := context.WithTimeout(k.ctx, pidWait)
	sp, err := k.server.Start(ctx, spec)
	cancel()
	var se *procwire.StartError
	if errors.As(err, &se) {
		return k.failedStart(req, spec, se)
	} else if err != nil {
		return contract.ProcessInfo{}, &box.RuntimeError{Step: "starting a process in the session", Err: err}
	}
	p := &keptProcess{out: newRing(contract.DefaultRingBytes, chunkCost), pid: make(chan struct{}), served: sp}
	close(p.pid)
	p.info = contract.ProcessInfo{ID: int(sp.ID()), PID: sp.PID(), Tag: req.Tag, Args: req.Args, Env: req.Env, Cwd: spec.Cwd, PTY: req.PTY != nil, Running: true, Started: time.Now().UTC()}
	if spec.Stdin {
		p.stdin = sp.Stdin()
	}
	k.note(p.info)
	k.track(p)
	_ = reaper.TouchSession(k.runDir, time.Now())
	return k.info(p), nil
}

// failedStart answers a start the server refused. A program that could
// not be executed is a process that ended at once, 127 (not found) or 126,
// saying why on stderr, as boxer-init's exec reports it; the rest (a
// directory that is not there, no room) are the request's errors.
func (k *keeper) failedStart(req contract.ProcessRequest, spec procwire.Spec, se *procwire.StartError) (contract.ProcessInfo, error) {
	switch {
	case strings.HasPrefix(se.Message, "chdir"):
		return contract.ProcessInfo{}, contract.FieldErr(contract.FieldCwd, "cannot be entered: %s", se.Message)
	case !strings.HasPrefix(se.Message, "exec: "):
		return contract.ProcessInfo{}, &box.RuntimeError{Step: "starting a process in the session", Err: se}
	}
	code := 126
	if se.Errno == uint32(unix.ENOENT) {
		code = 127
	}
	now := time.Now().UTC()
	p := &keptProcess{out: newRing(contract.DefaultRingBytes, chunkCost), pid: make(chan struct{})}
	close(p.pid)
	p.info = contract.ProcessInfo{Tag: req.Tag, Args: req.Args, Env: req.Env, Cwd: spec.Cwd, PTY: req.PTY != nil, Started: now, Ended: now, ExitCode: &code}
	stream := contract.StreamStderr
	if p.info.PTY {
		stream = contract.StreamPTY
	}
	p.out.write(stream, []byte("boxer-procd: "+se.Message+"\n"))
	p.out.close()
	p.info.ID = int(se.ID)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.procs[p.info.ID] = p
	k.next = max(k.next, p.info.ID)
	return p.info, nil
}

// adopt takes over a process a dead keeper started: what it was started
// with is lost, what it writes from now on is kept.
func (k *keeper) adopt(sp *procwire.Process) {
	in := sp.Info()
	p := &keptProcess{out: newRing(contract.DefaultRingBytes, chunkCost), pid: make(chan struct{}), served: sp}
	close(p.pid)
	p.info = contract.ProcessInfo{ID: int(in.ID), PID: in.PID, PTY: in.PTY, Running: true, Started: time.Now().UTC()}
	if in.Stdin {
		// Its stdin stays open: the dead keeper's callers' input goes on.
		p.stdin = sp.Stdin()
	}
	if noted, ok := k.noted(p.info.ID); ok && noted.PID == p.info.PID {
		p.info.Tag, p.info.Args, p.info.Env, p.info.Cwd, p.info.Started = noted.Tag, noted.Args, noted.Env, noted.Cwd, noted.Started
		// What it wrote before a checkpoint ended its keeper.
		if b, err := os.ReadFile(k.outPath(p.info.ID)); err == nil && len(b) <= maxOutImage {
			if r := unmarshalRing(b, contract.DefaultRingBytes, chunkCost); r != nil {
				p.out = r
			}
		}
	}
	_ = os.Remove(k.outPath(p.info.ID))
	k.track(p)
}

// note keeps what a process was started with beside its FIFOs, for the
// keeper that takes it over should this one die; forgotten at its end.
func (k *keeper) note(info contract.ProcessInfo) {
	if b, err := json.Marshal(info); err == nil {
		_ = reaper.WriteFileAtomic(k.notePath(info.ID), b, 0o600)
	}
}

// noted is what a dead keeper noted of process id (at most 2 MiB: a
// start is at most 256 KiB, escaped in JSON).
func (k *keeper) noted(id int) (contract.ProcessInfo, bool) {
	var info contract.ProcessInfo
	b, err := os.ReadFile(k.notePath(id))
	return info, err == nil && len(b) <= 2<<20 && json.Unmarshal(b, &info) == nil
}

func (k *keeper) notePath(id int) string {
	return filepath.Join(k.runDir, keeperFIFOs, "proc-"+strconv.Itoa(id)+".json")
}

// outPath keeps what a process wrote (its ring's image), saved just
// before a checkpoint (SaveOutputs), for the keeper that takes it over
// after the restore, in the session or a fork.
func (k *keeper) outPath(id int) string {
	return filepath.Join(k.runDir, keeperFIFOs, "proc-"+strconv.Itoa(id)+".out")
}

// maxOutImage bounds a ring's image read back: a ring's bytes, base64 in
// JSON, and its chunks' headers.
const maxOutImage = 4 << 20

// track adds p to the keeper's processes (numbered as on the channel,
// so that a process keeps its number when a keeper takes it over) and
// follows it to its end:
// then its status is recorded, its output closed, and the server
// forgets it.
func (k *keeper) track(p *keptProcess) {
	sp := p.served
	k.mu.Lock()
	k.procs[p.info.ID] = p
	k.next = max(k.next, p.info.ID)
	k.mu.Unlock()
	stream := contract.StreamStdout
	if p.info.PTY {
		stream = contract.StreamPTY
	}
	pumps := []<-chan struct{}{pump(sp.Stdout(), p.mask(k.masks, ringWriter{p.out, stream}))}
	if !p.info.PTY {
		pumps = append(pumps, pump(sp.Stderr(), p.mask(k.masks, ringWriter{p.out, contract.StreamStderr})))
	}
	go func() {
		x, waitErr := sp.Wait(k.ctx)
		ended := time.Now().UTC()
		drained := time.After(box.DrainTimeout)
		for _, done := range pumps {
			select {
			case <-done:
			case <-drained:
			}
		}
		// Released, the server drops what is left unread, and the
		// pumps end.
		if waitErr == nil {
			_ = sp.Release(context.WithoutCancel(k.ctx)) // fails only with the channel, which ends the pumps
		}
		for _, done := range pumps {
			<-done
		}
		code := x.Status()
		k.mu.Lock()
		p.info.Running, p.info.Ended = false, ended
		if waitErr != nil {
			code, p.info.Error = goneExit, "the session's process server ended: "+waitErr.Error()
		}
		p.info.ExitCode = &code
		k.mu.Unlock()
		p.closeStdin(k.ctx)
		for _, m := range p.masks {
			_ = m.Flush()
		}
		p.out.close()
		if waitErr == nil {
			// (Not when the channel ended: a checkpoint ends it, and the
			// process lives on in the image, for the next keeper.)
			_ = os.Remove(k.notePath(p.info.ID))
		}
		_ = reaper.TouchSession(k.runDir, time.Now())
	}()
}

// pump copies r into w until r ends, and closes the channel it returns.
func pump(r io.Reader, w io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(w, r)
	}()
	return done
}

// saveOutputs keeps each running process's output so far beside its note
// (outPath), for a checkpoint about to be taken.
func (k *keeper) saveOutputs() error {
	k.mu.Lock()
	var procs []*keptProcess
	for _, p := range k.procs {
		if p.served != nil && p.info.Running {
			procs = append(procs, p)
		}
	}
	k.mu.Unlock()
	for _, p := range procs {
		b, err := p.out.marshal()
		if err == nil {
			err = reaper.WriteFileAtomic(k.outPath(p.info.ID), b, 0o600)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// SaveOutputs has the keeper of the session in runDir, if one answers,
// keep its running processes' output so far for the keepers after a
// checkpoint (a restore's, a fork's). A keeper that does not answer had
// lost it already.
func (r *Layer) SaveOutputs(ctx context.Context, runDir string) error {
	kc := NewClient(filepath.Join(runDir, Sock))
	defer kc.HTTP.CloseIdleConnections()
	if !kc.Alive(ctx) {
		return nil
	}
	return kc.Call(ctx, "POST", "/output/save", nil, nil, nil)
}

// DropSavedOutputs removes what SaveOutputs kept in runDir once the
// checkpoint's forks have their copies (CopyNotes): the session's own
// keeper, which goes on, holds it.
func DropSavedOutputs(runDir string) {
	outs, _ := filepath.Glob(filepath.Join(runDir, keeperFIFOs, "proc-*.out"))
	for _, f := range outs {
		_ = os.Remove(f)
	}
}
