package session

// A session's call: its lock and number, its code and files in, its result.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/runner/sessionfs"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// lock takes the session's call lock: calls run one at a time, whichever
// boxer process makes them. It waits for ctx.
func (s *liveSession) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.runDir, sessionLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking session: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking session: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, contract.ErrInterrupted
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// next numbers the session's calls (under the lock).
func (s *liveSession) next() int {
	file := filepath.Join(s.runDir, sessionCallsFile)
	data, _ := os.ReadFile(file)
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	n++
	_ = os.WriteFile(file, []byte(strconv.Itoa(n)), 0o600)
	return n
}

// touch sets when the session was last used.
func (s *liveSession) touch(ctx context.Context, t time.Time) {
	if err := reaper.TouchSession(s.runDir, t); err != nil {
		log.G(ctx).WithError(err).Debug("marking session used")
	}
}

// RunInSession runs one call in session id of caller ("" for any). A
// non-nil error means the call did not run (the session is gone, or the
// call was refused) or was interrupted.
func (r *Layer) RunInSession(ctx context.Context, id, caller string, call contract.SessionCall, max contract.Maxima) (res contract.Result, retErr error) {
	res = contract.Result{ID: id, Session: id, Status: contract.StatusError, ExitCode: contract.ExitBoxer}
	defer func() {
		if retErr != nil {
			retErr = r.Fault(ctx, retErr)
			res.Error = retErr.Error()
		}
	}()
	s, err := r.loadSession(ctx, id, caller, true)
	if err != nil {
		return res, err
	}
	// A call in flight is a process of its caller's, and its output, when
	// streamed, a stream: counted while it waits and runs.
	release, err := r.holdProcess(ctx, caller, false)
	if err != nil {
		return res, err
	}
	defer release()
	if call.Stdout != nil {
		release, err := r.HoldStream(caller)
		if err != nil {
			return res, err
		}
		defer release()
	}
	req := s.rec.Request
	res.Runtime, res.Image = req.Runtime, req.ImageName()
	if call, err = call.Normalize(req, max); err != nil {
		return res, err
	}
	if call.Cell != nil {
		if err := call.Cell.Check(req.Lang, interpreted(req.Lang)); err != nil {
			return res, err
		}
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()
	if err := s.notPaused(ctx); err != nil {
		return res, err
	}
	n := s.next()
	res.ID = fmt.Sprintf("%s.%d", id, n)
	s.touch(ctx, time.Now().Add(call.Timeout+interruptGrace))
	network := r.CallNetwork(ctx, s.id, s.rec.Request)
	res, err = r.call(ctx, s, n, call, res)
	res.Network = network()
	if res.SessionEnded == "" {
		s.touch(ctx, time.Now())
	}
	return res, err
}

// call runs call n in s.
func (r *Layer) call(ctx context.Context, s *liveSession, n int, call contract.SessionCall, res contract.Result) (contract.Result, error) {
	req := s.rec.Request
	p, err := contract.LookupPreset(req.Lang)
	if err != nil {
		return res, err
	}
	name, code := fmt.Sprintf("call-%d%s", n, path.Ext(p.File)), call.Code
	if call.Cell != nil {
		// The driver reads a cell's code and context from a file of its own.
		name = fmt.Sprintf("call-%d.json", n)
		if code, err = call.Cell.Spec(call.Code); err != nil {
			return res, err
		}
	}
	codeFile := filepath.Join(s.runDir, "code", name)
	if err := os.WriteFile(codeFile, code, 0o644); err != nil {
		return res, fmt.Errorf("writing code: %w", err)
	}
	defer os.Remove(codeFile)
	workspace := sessionfs.WorkspaceDir(s.runDir)
	uid, gid, err := box.HostIDsOf(s.runDir, req.UID, req.GID)
	if err != nil {
		return res, err
	}
	if err := box.WriteFiles(workspace, call.Files, uid, gid); err != nil {
		return res, err
	}
	masks, err := r.SessionMasks(ctx, s.id, s.rec.Request)
	if err != nil {
		return res, err
	}
	stdout, stderr := contract.NewCapped(call.OutputLimit, call.Stdout), contract.NewCapped(call.OutputLimit, call.Stderr)
	mout, merr, flush := keeper.MaskCall(masks, stdout, stderr)
	cg := reaper.CgroupsPath(r.Namespace, s.id)
	before, _ := cgroups.ReadStats(r.Cgroups, cg)
	peak := cgroups.WatchPeak(r.Cgroups, cg)
	var end callEnd
	if interpreted(req.Lang) {
		end, err = r.wireCall(ctx, s, n, name, call, mout, merr)
	} else if s.rec.ProcServer {
		end, err = r.servedCall(ctx, s, n, p, name, call, mout, merr)
	} else {
		end, err = r.execCall(ctx, s, n, p, name, call, mout, merr)
	}
	flush()
	if err != nil {
		return box.StartFailed(res, err)
	}
	facts := end.facts
	res.SessionEnded = end.sessionEnded
	if res.SessionEnded != "" {
		res.Error = fmt.Sprintf("the session ended: %s", contract.EndText(res.SessionEnded))
	}
	res.DurationMs = float64(end.ended.Sub(end.started).Microseconds()) / 1000
	after, _ := cgroups.ReadStats(r.Cgroups, cg)
	res.CPUTimeMs = float64((after.CPUTimeNs-min(before.CPUTimeNs, after.CPUTimeNs))/1000) / 1000
	facts.OOMKills = after.OOMKills - min(before.OOMKills, after.OOMKills)
	res.MemoryPeakBytes, res.MemoryPeakScope = after.MemoryPeakBytes, "session"
	if peak != nil {
		if v, err := peak.Read(); err == nil {
			res.MemoryPeakBytes, res.MemoryPeakScope = v, "call"
		}
	}
	res.Stdout, res.StdoutTruncated = stdout.Text()
	res.Stderr, res.StderrTruncated = stderr.Text()
	if len(call.ReturnFiles) > 0 && !facts.Interrupted {
		res.Files = box.ReturnFiles(workspace, call.ReturnFiles, call.ReturnBytes)
	}
	o := contract.Classify(facts)
	res.Status, res.ExitCode, res.Signal = o.Status, o.Code, o.Signal
	if end.noStatus {
		res.Status, res.ExitCode, res.Signal = contract.StatusError, contract.ExitBoxer, ""
	}
	if res.SessionEnded == "" && !end.alive {
		res.SessionEnded = r.checkAlive(ctx, s)
		if res.SessionEnded == "" && end.wireEnded && s.rec.Driver == nil {
			// containerd may not have seen the driver's exit yet. (A
			// relayed wire's end without its keeper's word that the
			// driver ended is the keeper's: the next call's keeper
			// takes the driver over.)
			_ = r.endSession(ctx, s.c, reaper.EndInterpreter)
			res.SessionEnded = reaper.EndInterpreter
		}
		if res.SessionEnded == reaper.EndInterpreter && facts.OOMKills > 0 && !facts.TimedOut {
			res.Status, res.ExitCode, res.Signal = contract.StatusOOM, contract.ExitOOM, "SIGKILL"
		} else if res.SessionEnded != "" && end.noStatus {
			res.Error = fmt.Sprintf("the session ended: %s", contract.EndText(res.SessionEnded))
		} else if end.noStatus && end.wireEnded {
			res.Error = "the session's keeper went during the call, before its status came: the session lives on, and the next call's keeper takes its interpreter over"
		}
	}
	if facts.Interrupted {
		return res, contract.ErrInterrupted
	}
	return res, nil
}

// callEnd is how a call ended.
type callEnd struct {
	facts          contract.ExitFacts
	started, ended time.Time
	// sessionEnded says why the call ended the session, if it did; alive,
	// that the session is known to live on (its interpreter answered);
	// noStatus, that there is no exit status of the call's code (it did
	// not run, or its interpreter did not answer).
	sessionEnded    string
	alive, noStatus bool
	// wireEnded: the driver's end of the wire is closed, which it is
	// only once it has exited (or a call closed it).
	wireEnded bool
}
