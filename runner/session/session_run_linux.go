package session

// Running a call's code: through the driver's wire, or as a process of its own.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// wireCall runs call n of an interpreted session through its wire: the
// driver runs /code/name with the call's streams and answers with its
// status.
func (r *Layer) wireCall(ctx context.Context, s *liveSession, n int, name string, call contract.SessionCall, stdout, stderr io.Writer) (callEnd, error) {
	var end callEnd
	end.started = time.Now()
	end.ended, end.noStatus = end.started, true
	w, err := r.openWire(ctx, s.runDir, s.id, s.rec.Driver != nil)
	if errors.Is(err, keeper.ErrWireGone) {
		end.wireEnded = true
		return end, nil // checkAlive says why
	} else if err != nil {
		if end.sessionEnded = r.endingNow(ctx, s); end.sessionEnded != "" {
			return end, nil
		}
		return end, err
	}
	defer w.Close()
	kind := "run"
	var records *contract.CellRecords
	if call.Cell != nil {
		kind = "cell"
		records = &contract.CellRecords{Cell: call.Cell, Warn: func(s string) { _, _ = io.WriteString(stderr, s) }}
	}
	if err := w.Send(kind, n, []byte(name)); err != nil {
		return end, nil
	}
	interrupt := func() error { return r.interruptIn(ctx, s) }
	return r.onWire(ctx, s, w, n, call, records, stdout, stderr, interrupt, true), nil
}

// servedCall runs call n of a session with a process server as a program
// of its own, started through it by the session's keeper, which speaks
// the wire's frames for it (keeper.DialCall).
func (r *Layer) servedCall(ctx context.Context, s *liveSession, n int, p contract.Preset, name string, call contract.SessionCall, stdout, stderr io.Writer) (callEnd, error) {
	var end callEnd
	end.started = time.Now()
	end.ended, end.noStatus = end.started, true
	w, err := r.DialCall(ctx, s.runDir, s.id, n, append(slices.Clone(p.Command), path.Join("/code", name)))
	if err != nil {
		if end.sessionEnded = r.endingNow(ctx, s); end.sessionEnded != "" {
			return end, nil
		}
		return end, &box.RuntimeError{Step: "starting call", Err: err}
	}
	defer w.Close()
	kill := func() error { return r.KillCall(context.WithoutCancel(ctx), s.runDir, n) }
	return r.onWire(ctx, s, w, n, call, nil, stdout, stderr, kill, false), nil
}

// onWire sends the call's stdin on w and passes its output on until its
// exit frame. At its timeout (or its caller's end) interrupt stops it;
// if it still does not end, the session is ended. interpreter says the
// other end is the session's interpreter, whose end, or a frame that is
// not one, ends the session.
func (r *Layer) onWire(ctx context.Context, s *liveSession, w *keeper.Wire, n int, call contract.SessionCall, records *contract.CellRecords, stdout, stderr io.Writer, interrupt func() error, interpreter bool) callEnd {
	var end callEnd
	end.started = time.Now()
	end.ended, end.noStatus = end.started, true
	go func() {
		if err := w.SendStdin(n, call.Stdin); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) && !errors.Is(err, keeper.ErrWireGone) {
			log.G(ctx).WithError(err).Debug("sending a call's stdin")
		}
	}()
	defer w.StopSending()
	frames, done := make(chan keeper.Frame), make(chan struct{})
	defer close(done)
	go w.ReceiveAll(frames, done)
	// wait passes the call's output on until its exit frame, the end of
	// the wire, or stop.
	wait := func(stop <-chan time.Time, cancel <-chan struct{}) (status uint32, why error) {
		for {
			select {
			case f := <-frames:
				switch {
				case f.Err != nil:
					return 0, f.Err
				case f.Call != n:
					// A caller before this one died during its call.
				case f.Kind == "out":
					_, _ = stdout.Write(f.Data)
				case f.Kind == "err":
					_, _ = stderr.Write(f.Data)
				case f.Kind == "rec" && records != nil:
					records.Write(f.Data)
				case f.Kind == "exit":
					code, err := strconv.ParseUint(string(f.Data), 10, 8)
					if err != nil {
						return 0, keeper.ErrWireBroken
					}
					return uint32(code), nil
				default:
					return 0, keeper.ErrWireBroken
				}
			case <-stop:
				return 0, errTimedOut
			case <-cancel:
				return 0, contract.ErrInterrupted
			}
		}
	}
	timer := time.NewTimer(call.Timeout)
	defer timer.Stop()
	status, why := wait(timer.C, ctx.Done())
	if errors.Is(why, errTimedOut) || errors.Is(why, contract.ErrInterrupted) {
		end.facts.TimedOut, end.facts.Interrupted = errors.Is(why, errTimedOut), errors.Is(why, contract.ErrInterrupted)
		if err := interrupt(); err != nil {
			log.G(ctx).WithError(err).Warn("interrupting call")
		}
		status, why = wait(time.After(interruptGrace), nil)
		if errors.Is(why, errTimedOut) {
			_ = r.endSession(ctx, s.c, reaper.EndStuck)
			end.sessionEnded, status, why = reaper.EndStuck, 255, nil
		}
	}
	end.ended = time.Now()
	switch {
	case why == nil:
		end.facts.Status, end.noStatus = status, false
		end.alive = interpreter && end.sessionEnded == ""
	case !interpreter:
		// The keeper or the process server went before the program's
		// status came: checkAlive says whether the session lives.
	case errors.Is(why, keeper.ErrWireBroken):
		_ = r.endSession(ctx, s.c, reaper.EndWireBroken)
		end.sessionEnded = reaper.EndWireBroken
	default:
		// The driver's end closed (it exited, or was killed: the
		// memory limit, a kill from inside): checkAlive says why.
		end.facts.Status, end.wireEnded = 255, true
	}
	return end
}

// openWire opens the wire of session id in runDir: its FIFOs, or
// (relayed) a connection to its keeper, which relays it.
func (r *Layer) openWire(ctx context.Context, runDir, id string, relayed bool) (*keeper.Wire, error) {
	if relayed {
		return r.DialWire(ctx, runDir, id)
	}
	return keeper.OpenWire(runDir)
}

// errTimedOut: a call's timeout passed.
var errTimedOut = errors.New("timed out")

// execCall runs call n of a session as a process of its own in the
// sandbox (bash, javascript, typescript: only files persist).
func (r *Layer) execCall(ctx context.Context, s *liveSession, n int, p contract.Preset, name string, call contract.SessionCall, stdout, stderr io.Writer) (callEnd, error) {
	var end callEnd
	opCtx := context.WithoutCancel(ctx)
	task, err := s.loadTask(opCtx)
	if err != nil {
		return end, err
	}
	spec, err := s.c.Spec(opCtx)
	if err != nil {
		return end, fmt.Errorf("reading session spec: %w", err)
	}
	proc := *spec.Process
	proc.Args = append([]string{"/bin/sh", "-c", `echo $$ > ` + callPid + ` && exec "$@"`, "sh"}, append(p.Command, path.Join("/code", name))...)
	proc.Args = keeper.WithSecretEnv(proc.Args, s.rec.SecretEnv, proc.Env)
	pr, pw := io.Pipe()
	stdin := &contract.EOFReader{Reader: pr, EOF: make(chan struct{})}
	defer pw.Close()
	execID := "call-" + strconv.Itoa(n)
	process, err := task.Exec(opCtx, execID, &proc, cio.NewCreator(cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(s.runDir)))
	if err != nil {
		if end.sessionEnded = r.endingNow(ctx, s); end.sessionEnded != "" {
			return end, nil
		}
		return end, &box.RuntimeError{Step: "starting call", Err: err}
	}
	defer func() {
		if _, err := process.Delete(opCtx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debug("deleting call process")
		}
	}()
	statusC, err := process.Wait(opCtx)
	if err != nil {
		return end, fmt.Errorf("waiting on call: %w", err)
	}
	end.started = time.Now()
	if err := process.Start(opCtx); err != nil {
		return end, &box.RuntimeError{Step: "starting call", Err: err}
	}
	go func() {
		if call.Stdin != nil {
			_, _ = io.Copy(pw, call.Stdin)
		}
		pw.Close()
	}()
	go func() {
		<-stdin.EOF
		if err := process.CloseIO(opCtx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Debug("closing stdin")
		}
	}()
	var status containerd.ExitStatus
	timer := time.NewTimer(call.Timeout)
	defer timer.Stop()
	select {
	case status = <-statusC:
	case <-timer.C:
		end.facts.TimedOut = true
	case <-ctx.Done():
		end.facts.Interrupted = true
	}
	if end.facts.TimedOut || end.facts.Interrupted {
		status, end.sessionEnded = r.interrupt(ctx, s, process, statusC)
	}
	end.ended = time.Now()
	if t := status.ExitTime(); !t.IsZero() && t.After(end.started) {
		end.ended = t
	}
	end.facts.Status = status.ExitCode()
	r.drainCall(process)
	return end, nil
}

// interrupt stops a call at its timeout (or its caller's end): the program
// is killed. If the call still does not end, the session is ended. It
// returns the call's exit status and why the session ended, if it did.
func (r *Layer) interrupt(ctx context.Context, s *liveSession, process containerd.Process, statusC <-chan containerd.ExitStatus) (containerd.ExitStatus, string) {
	opCtx := context.WithoutCancel(ctx)
	if err := process.Kill(opCtx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
		log.G(ctx).WithError(err).Debug("killing call")
	}
	// Under runsc the kill reaches runsc's exec process, not the program.
	if err := s.execIn(opCtx, []string{"/bin/sh", "-c", `kill -KILL "$(cat ` + callPid + `)"`}); err != nil {
		log.G(ctx).WithError(err).Warn("interrupting call")
	}
	select {
	case st := <-statusC:
		return st, ""
	case <-time.After(interruptGrace):
	}
	_ = r.endSession(ctx, s.c, reaper.EndStuck)
	select {
	case st := <-statusC:
		return st, reaper.EndStuck
	case <-time.After(reaper.CleanupTimeout):
		return *containerd.NewExitStatus(255, time.Now(), nil), reaper.EndStuck
	}
}

// interruptIn sends the session's interpreter SIGINT, from inside the
// sandbox: it has interruptGrace to come back from the call's code.
func (r *Layer) interruptIn(ctx context.Context, s *liveSession) error {
	if s.rec.Driver != nil {
		// Its interpreter is its process server's: signalled through it.
		return r.InterruptDriver(context.WithoutCancel(ctx), s.runDir)
	}
	return s.execIn(context.WithoutCancel(ctx), []string{"/bin/sh", "-c", `kill -INT "$(cat ` + driverPid + `)"`})
}

// loadTask loads the session's task, once.
func (s *liveSession) loadTask(ctx context.Context) (containerd.Task, error) {
	if s.task == nil {
		task, err := s.c.Task(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("loading session task: %w", err)
		}
		s.task = task
	}
	return s.task, nil
}

// execIn runs a short command in the session's sandbox, as its user, and
// waits for it (at most a few seconds).
func (s *liveSession) execIn(ctx context.Context, args []string) error {
	task, err := s.loadTask(ctx)
	if err != nil {
		return err
	}
	spec, err := s.c.Spec(ctx)
	if err != nil {
		return err
	}
	proc := *spec.Process
	proc.Args = args
	p, err := task.Exec(ctx, "interrupt-"+strconv.FormatInt(time.Now().UnixNano(), 36), &proc, cio.NullIO)
	if err != nil {
		return err
	}
	defer p.Delete(ctx, containerd.WithProcessKill)
	statusC, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	select {
	case <-statusC:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// drainCall waits for a call's output, as sandbox.drain does for a run.
func (r *Layer) drainCall(process containerd.Process) {
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
}
