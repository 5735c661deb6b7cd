package session

// Ending a session: expiry, removal, and the end a call or its holder brings.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// expire ends session c if it is over, and says why ("" if it lives);
// ended says whether this call removed it. info's labels may be a list's:
// a verdict to end the session is taken again on labels read now (see
// reaper.SessionEnd), and a session another live process removes is left
// to it. ask says whether to ask containerd whether its sandbox runs.
func (r *Layer) expire(ctx context.Context, c containerd.Container, info containers.Container, ask bool) (reason string, ended bool) {
	if r.verdict(ctx, c, info.Labels, ask) == "" {
		return "", false
	}
	fresh, err := c.Info(ctx)
	switch {
	case errdefs.IsNotFound(err):
		return reaper.EndRemoved, false
	case err != nil:
		return "", false // the next look tells
	}
	if reason, ok := reaper.BeingEnded(fresh.Labels); ok {
		return reason, false
	}
	if reason = r.verdict(ctx, c, fresh.Labels, ask); reason == "" {
		return "", false
	}
	_ = r.endSession(ctx, c, reason)
	return reason, true
}

// verdict says whether session c, with these labels, is over, and why:
// reaper.SessionEnd's verdict, or (asked) a session this process holds
// and has made whose sandbox no longer runs. One being made is its
// maker's: its task is not started yet.
func (r *Layer) verdict(ctx context.Context, c containerd.Container, labels map[string]string, ask bool) string {
	var runs func() bool
	if ask {
		runs = func() bool { return reaper.TaskRunning(ctx, c) }
	}
	used := reaper.LastUsed(labels, filepath.Join(r.RunsDir, c.ID()))
	reason := reaper.SessionEnd(labels, used, time.Now(), runs)
	if reason == "" && ask && labels[reaper.LabelOwner] == r.Owner && labels[reaper.LabelSessionMade] != "" && !reaper.TaskRunning(ctx, c) {
		reason = reaper.EndExited
	}
	if reason == reaper.EndExited {
		reason = r.Exited(c.ID())
	}
	return reason
}

// Exited is why session id ended when its sandbox stopped on its own:
// its process server's end for a session whose first program it was
// (killed from inside, out of memory, or ended by its keeper for breaking
// its channel), its sandbox's for the others.
func (r *Layer) Exited(id string) string {
	data, err := os.ReadFile(filepath.Join(r.RunsDir, id, sessionRecordFile))
	var rec sessionRecord
	if err == nil && json.Unmarshal(data, &rec) == nil && rec.ProcServer {
		return reaper.EndProcServer
	}
	return reaper.EndExited
}

// endSession removes a session's sandbox and returns a SessionEndedError
// that says why.
func (r *Layer) endSession(ctx context.Context, c containerd.Container, reason string) error {
	if err := r.removeSession(ctx, c, reason); err != nil {
		log.G(ctx).WithError(err).Warnf("removing session %s", c.ID())
	}
	return &contract.SessionEndedError{ID: c.ID(), Reason: reason}
}

// removeSession labels session c as being removed by this process, for
// reason, and removes it: another process that finds it meanwhile (its
// maker among them) leaves it to this one and tells the same reason.
// What its network carried, read from its keeper just before, is kept
// for EndedNetwork.
func (r *Layer) removeSession(ctx context.Context, c containerd.Container, reason string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reaper.CleanupTimeout)
	defer cancel()
	rep := r.finalNetwork(cctx, c.ID())
	if rep != nil {
		r.ends.put(c.ID(), rep)
	}
	labels, err := c.Labels(cctx)
	if _, err := reaper.MarkEnding(cctx, c, reason); err != nil && !errdefs.IsNotFound(err) {
		log.G(ctx).WithError(err).Debugf("marking session %s as being removed", c.ID())
	}
	if err == nil {
		// Its owner's next command says why, whoever removed it.
		reaper.RecordEnded(r.StateDir, r.Namespace, c.ID(), labels[reaper.LabelSession], reason)
		// Another live process holds it: it writes the end in its audit
		// log (takeHandedEnds).
		r.handEnd(cctx, c, labels, reason, rep)
	}
	return r.DestroyLeftover(ctx, c)
}

// releaseSession releases what session id, of run directory runDir,
// holds beside its sandbox, before Sandbox.Destroy removes the rest: the
// link its keeper served (unless linked: this process holds it as the
// sandbox's Link, which the sandbox removes), and its checkpoint, if it
// has one.
func (r *Layer) releaseSession(id, runDir string, linked bool) error {
	var errs []error
	if !linked {
		errs = append(errs, r.ReleaseSessionLink(runDir))
	}
	if err := os.RemoveAll(r.checkpointDir(id)); err != nil {
		errs = append(errs, fmt.Errorf("removing checkpoint: %w", err))
	}
	return errors.Join(errs...)
}

// RemoveSession ends a session of caller ("" for any).
func (r *Layer) RemoveSession(ctx context.Context, id, caller string) error {
	s, err := r.findSession(ctx, id, caller, false)
	var ended *contract.SessionEndedError
	if errors.As(err, &ended) {
		return nil
	} else if err != nil {
		return err
	}
	if err := r.removeSession(ctx, s.c, reaper.EndRemoved); err != nil {
		return fmt.Errorf("removing session %s: %w", id, err)
	}
	return nil
}

// ExpireSessions ends every session that is over (a server calls it on a
// timer: the idle timeout holds without a call) and returns those it
// ended, and those of its own that another process ended meanwhile (a
// `boxer session rm`). Sessions being made, by this process or another,
// are left to their makers.
func (r *Layer) ExpireSessions(ctx context.Context) []contract.EndedSession {
	ended := r.takeHandedEnds()
	cs, err := r.Containerd.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return ended
	}
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		if reason, ok := r.expire(ctx, c, info, true); ok {
			ended = append(ended, contract.EndedSession{ID: c.ID(), Caller: info.Labels[reaper.LabelSession], Reason: reason, Network: r.EndedNetwork(c.ID())})
		}
	}
	return ended
}

// CloseSessions ends the sessions this process holds whose caller is
// caller ("" for all), for reason (a client that disconnected, a server
// that shuts down), and returns them. One it is still making ends too:
// its maker finds it being removed and fails with this reason.
func (r *Layer) CloseSessions(ctx context.Context, caller, reason string) []contract.EndedSession {
	ended, _ := r.closeSessions(ctx, caller, reason, false)
	return ended
}

// HandOverSessions is CloseSessions for a server that stops to be
// followed by another (SIGTERM: an upgrade, a restart): the sessions it
// holds that have an heir (SessionRequest.Heir) are left running for the
// heir's next process to adopt (AdoptSessions), meanwhile ended only by
// their own idle timeout and lifetime; the others end for reason. It
// returns the ended ones and the IDs left.
func (r *Layer) HandOverSessions(ctx context.Context, reason string) ([]contract.EndedSession, []string) {
	return r.closeSessions(ctx, "", reason, true)
}

func (r *Layer) closeSessions(ctx context.Context, caller, reason string, keepHeirs bool) (ended []contract.EndedSession, left []string) {
	// One filter, its selectors joined by a comma: containerd ORs
	// separate filters, which would match every sandbox of this process.
	cs, err := r.Containerd.Containers(ctx, `labels."`+reaper.LabelSession+`",labels."`+reaper.LabelOwner+`"==`+strconv.Quote(r.Owner))
	if err != nil {
		return nil, nil
	}
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || caller != "" && info.Labels[reaper.LabelSession] != caller {
			continue
		}
		if info.Labels[reaper.LabelSessionReady] != "" {
			// No caller's: the ready pool removes it (CloseReady).
			continue
		}
		if keepHeirs && info.Labels[reaper.LabelSessionHeir] != "" && info.Labels[reaper.LabelSessionMade] != "" {
			left = append(left, c.ID())
			continue
		}
		_ = r.endSession(ctx, c, reason)
		ended = append(ended, contract.EndedSession{ID: c.ID(), Caller: info.Labels[reaper.LabelSession], Reason: reason, Network: r.EndedNetwork(c.ID())})
	}
	return ended, left
}

// checkAlive ends the session if a call ended its interpreter or its
// sandbox, and says why.
func (r *Layer) checkAlive(ctx context.Context, s *liveSession) string {
	reason := ""
	task, err := s.loadTask(ctx)
	if errdefs.IsNotFound(err) || err == nil && !processRunning(ctx, task) {
		reason = reaper.EndExited
		if s.rec.ProcServer {
			reason = reaper.EndProcServer
		}
		if s.rec.DriverFirst || s.driverEnded() {
			// Its interpreter was its first program, or its keeper
			// ended it when its interpreter ended.
			reason = reaper.EndInterpreter
		}
	} else if err == nil && s.driverEnded() {
		reason = reaper.EndInterpreter
	} else if err == nil && interpreted(s.rec.Request.Lang) && !s.rec.DriverFirst && s.rec.Driver == nil {
		driver, err := task.LoadProcess(ctx, driverExecID, nil)
		if errdefs.IsNotFound(err) || err == nil && !processRunning(ctx, driver) {
			reason = reaper.EndInterpreter
		}
	}
	if reason != "" {
		_ = r.endSession(ctx, s.c, reason)
	}
	return reason
}

// endWait is how long a call that could not reach its session's keeper
// waits for the session's end to show: a keeper exits with its sandbox's
// first program, and gVisor's task is seen stopped a moment after.
const endWait = 3 * time.Second

// endingNow is why session s ended, when a call could not reach its keeper
// because it is ending; "" when it still lives after endWait (the call's
// own error says what went wrong).
func (r *Layer) endingNow(ctx context.Context, s *liveSession) string {
	deadline := time.Now().Add(endWait)
	for {
		if reason := r.checkAlive(ctx, s); reason != "" || time.Now().After(deadline) {
			return reason
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// driverEnded says whether session s's keeper saw its interpreter, one of
// its process server's, end (keeper.DriverEnded).
func (s *liveSession) driverEnded() bool {
	if s.rec.Driver == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(s.runDir, keeper.DriverEnded))
	return err == nil
}

// processRunning says whether p (a task or an exec'd process) runs.
func processRunning(ctx context.Context, p containerd.Process) bool {
	st, err := p.Status(ctx)
	if err != nil {
		// Only "no such process" is an answer (see reaper.TaskRunning).
		return !errdefs.IsNotFound(err)
	}
	return st.Status == containerd.Running
}

// finalNetwork is what session id's network carried over its life, from
// its keeper (nil for a session without network, or a keeper that does
// not answer: none is started to ask).
func (r *Layer) finalNetwork(ctx context.Context, id string) *egress.Report {
	runDir := filepath.Join(r.RunsDir, id)
	if _, err := os.Stat(filepath.Join(runDir, keeper.NetFile)); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	kc := keeper.NewClient(filepath.Join(runDir, keeper.Sock))
	defer kc.HTTP.CloseIdleConnections()
	var rep egress.Report
	if err := kc.Call(ctx, "GET", "/network", nil, nil, &rep); err != nil {
		log.G(ctx).WithError(err).Debugf("session %s: reading its network figures", id)
		return nil
	}
	return &rep
}

// EndedNetwork is what the network of session id, which this process
// ended, carried over its life; nil if it had no network or its figures
// could not be read, or were taken already. A server takes them for its
// audit log.
func (r *Layer) EndedNetwork(id string) *egress.Report {
	if r == nil {
		return nil
	}
	return r.ends.take(id)
}

// endedNets holds the last figures of the sessions this process ended,
// until they are taken: the latest maxEndedNets, should nobody take them.
type endedNets struct {
	mu    sync.Mutex
	byID  map[string]*egress.Report
	order []string
}

const maxEndedNets = 256

func (e *endedNets) put(id string, rep *egress.Report) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = map[string]*egress.Report{}
	}
	if _, ok := e.byID[id]; !ok {
		e.order = append(e.order, id)
	}
	e.byID[id] = rep
	for len(e.order) > maxEndedNets {
		delete(e.byID, e.order[0])
		e.order = e.order[1:]
	}
}

func (e *endedNets) take(id string) *egress.Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	rep, ok := e.byID[id]
	if !ok {
		return nil
	}
	delete(e.byID, id)
	e.order = slices.DeleteFunc(e.order, func(s string) bool { return s == id })
	return rep
}
