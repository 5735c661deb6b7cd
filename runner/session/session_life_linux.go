package session

// A session's life: pausing and resuming it, setting its time left, its figures.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// A paused session's sandbox is frozen: containerd's task Pause, which runc
// does with the cgroup freezer and runsc by stopping the sandbox's tasks.
// Its processes keep their memory and state and use no CPU; its files stay.
// It is marked paused by a label (reaper.LabelSessionPaused), set before it
// is frozen and removed once it is thawed, so that every boxer process
// agrees on it: its idle clock stops (reaper.SessionEnd skips the idle
// timeout), while its deadline still runs. A call, a file or a process
// asked of it is refused with a SessionPausedError, not left to wait on a
// frozen sandbox. Pausing and resuming take the session's call lock: a
// pause waits for the call under way to end, and a call that waited for
// the lock meanwhile finds the session paused.

// PauseSession freezes session id of caller ("" for any). Pausing a paused
// session changes nothing.
func (r *Layer) PauseSession(ctx context.Context, id, caller string) (_ contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	s, unlock, err := r.lockedSession(ctx, id, caller)
	if err != nil {
		return contract.Session{}, err
	}
	defer unlock()
	if s.paused {
		return s.info(), nil
	}
	task, err := s.loadTask(ctx)
	if err != nil {
		return contract.Session{}, err
	}
	opCtx := context.WithoutCancel(ctx)
	if s.labels, err = s.c.SetLabels(opCtx, map[string]string{reaper.LabelSessionPaused: strconv.FormatInt(time.Now().Unix(), 10)}); err != nil {
		return contract.Session{}, fmt.Errorf("marking session %s paused: %w", id, err)
	}
	if err := pauseTask(opCtx, task); err != nil {
		if _, lerr := s.c.SetLabels(opCtx, map[string]string{reaper.LabelSessionPaused: ""}); lerr != nil {
			log.G(ctx).WithError(lerr).Warnf("unmarking session %s paused", id)
		}
		return contract.Session{}, &box.RuntimeError{Step: "pausing session", Err: err}
	}
	return s.info(), nil
}

// pauseAttempts bounds how often pauseTask tries: runc's cgroup v1
// freezer gives up ("unable to freeze") on a sandbox whose processes are
// still starting (an interpreter just launched, a fork under way), and
// thaws it again; a moment later it freezes.
const pauseAttempts = 5

// pauseTask freezes task, trying again after a freezer that gave up.
func pauseTask(ctx context.Context, task containerd.Task) error {
	var b box.RetryBackoff
	for i := 1; ; i++ {
		err := task.Pause(ctx)
		if err == nil || i == pauseAttempts || !strings.Contains(err.Error(), "unable to freeze") {
			return err
		}
		b.Wait(ctx)
	}
}

// ResumeSession thaws session id of caller ("" for any): its processes go
// on from where they were, and its idle clock starts again from now.
// Resuming a session that runs changes nothing.
func (r *Layer) ResumeSession(ctx context.Context, id, caller string) (_ contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	s, unlock, err := r.lockedSession(ctx, id, caller)
	if err != nil {
		return contract.Session{}, err
	}
	defer unlock()
	if s.labels[reaper.LabelSessionCheckpointed] != "" {
		return r.resumeCheckpointed(ctx, s)
	}
	task, err := s.loadTask(ctx)
	if err != nil {
		return contract.Session{}, err
	}
	opCtx := context.WithoutCancel(ctx)
	// Used now before the label goes: a sweep in between must not find
	// it idle since before the pause.
	s.touch(ctx, time.Now())
	if st, err := task.Status(opCtx); err != nil {
		return contract.Session{}, fmt.Errorf("reading session %s's state: %w", id, err)
	} else if st.Status == containerd.Paused || st.Status == containerd.Pausing {
		if err := task.Resume(opCtx); err != nil {
			return contract.Session{}, &box.RuntimeError{Step: "resuming session", Err: err}
		}
	}
	if s.paused {
		if s.labels, err = s.c.SetLabels(opCtx, map[string]string{reaper.LabelSessionPaused: ""}); err != nil {
			return contract.Session{}, fmt.Errorf("marking session %s resumed: %w", id, err)
		}
		s.paused = false
	}
	return s.info(), nil
}

// SetSessionTimeout sets the time session id of caller ("" for any) has
// left: it ends timeout from now, earlier or later than it would have.
// Its end may not pass its backstop, the latest its sandbox was made to
// live (its maker's maximum lifetime after it was made), nor smax's
// Lifetime after it was made. A paused session's time runs too.
func (r *Layer) SetSessionTimeout(ctx context.Context, id, caller string, timeout time.Duration, smax contract.SessionMaxima) (_ contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	if timeout < time.Second {
		return contract.Session{}, contract.FieldErr(contract.FieldTimeout, "must be at least 1s: the time the session has left (to end it now, remove it)")
	}
	s, err := r.findSession(ctx, id, caller, false)
	if err != nil {
		return contract.Session{}, err
	}
	latest := s.rec.Backstop
	if latest.IsZero() {
		// Made by a boxer before backstops: its sandbox ends itself at
		// the deadline it was made with.
		latest = s.rec.Deadline
	}
	if smax.Lifetime > 0 && s.rec.CreatedAt.Add(smax.Lifetime).Before(latest) {
		latest = s.rec.CreatedAt.Add(smax.Lifetime)
	}
	deadline := time.Now().Add(timeout)
	if deadline.After(latest) {
		return contract.Session{}, contract.FieldErr(contract.FieldTimeout, "%s from now is past the latest this session may live, %s (its maximum lifetime after it started): ask for at most %s",
			timeout, latest.UTC().Format(time.RFC3339), time.Until(latest).Truncate(time.Second))
	}
	opCtx := context.WithoutCancel(ctx)
	if s.labels, err = s.c.SetLabels(opCtx, map[string]string{reaper.LabelSessionDeadline: strconv.FormatInt(deadline.Unix(), 10)}); err != nil {
		if errdefs.IsNotFound(err) {
			return contract.Session{}, &contract.SessionEndedError{ID: id, Reason: reaper.EndRemoved}
		}
		return contract.Session{}, fmt.Errorf("setting session %s's deadline: %w", id, err)
	}
	// The record follows the label, which is what every process reads.
	s.rec.Deadline = time.Unix(deadline.Unix(), 0)
	if data, err := json.Marshal(s.rec); err == nil {
		if err := reaper.WriteFileAtomic(filepath.Join(s.runDir, sessionRecordFile), data, 0o600); err != nil {
			log.G(ctx).WithError(err).Debugf("writing session %s's record", id)
		}
	}
	return s.info(), nil
}

// SessionStats reads the figures of session id of caller ("" for any),
// paused or not. Asking is no use of it: its idle clock runs on.
func (r *Layer) SessionStats(ctx context.Context, id, caller string) (contract.SessionStats, error) {
	s, err := r.findSession(ctx, id, caller, false)
	if err != nil {
		return contract.SessionStats{}, r.Fault(ctx, err)
	}
	// A checkpointed one has no sandbox, and uses no CPU or memory.
	var st cgroups.Stats
	if s.labels[reaper.LabelSessionCheckpointed] == "" {
		if st, err = cgroups.ReadStats(r.Cgroups, reaper.CgroupsPath(r.Namespace, id)); err != nil {
			return contract.SessionStats{}, fmt.Errorf("reading session %s's figures: %w", id, err)
		}
	}
	out := contract.SessionStats{
		ID: id, At: time.Now().UTC(), Paused: s.paused, Checkpointed: s.labels[reaper.LabelSessionCheckpointed] != "",
		CPUTimeMs:   float64(st.CPUTimeNs/1000) / 1000,
		MemoryBytes: st.MemoryBytes, MemoryPeakBytes: st.MemoryPeakBytes, MemoryLimitBytes: s.rec.Request.MemoryBytes,
	}
	// /workspace, /tmp and /home/user are one tmpfs, mounted on the host.
	var fs unix.Statfs_t
	if err := unix.Statfs(reaper.FilesDir(s.runDir), &fs); err != nil {
		return contract.SessionStats{}, fmt.Errorf("reading session %s's files: %w", id, err)
	}
	out.DiskLimitBytes = fs.Blocks * uint64(fs.Bsize)
	out.DiskUsedBytes = (fs.Blocks - fs.Bfree) * uint64(fs.Bsize)
	if len(s.rec.Request.AllowHosts) > 0 {
		n, err := r.SessionNetwork(ctx, id, caller)
		if err != nil {
			return contract.SessionStats{}, err
		}
		out.Network = &contract.NetworkStats{SentBytes: uint64(n.BytesOut), ReceivedBytes: uint64(n.BytesIn)}
	}
	return out, nil
}

// reload reads the session's labels again (under its lock: a pause or a
// resume may have come since it was loaded).
func (s *liveSession) reload(ctx context.Context) error {
	labels, err := s.c.Labels(ctx)
	if errdefs.IsNotFound(err) {
		return &contract.SessionEndedError{ID: s.id, Reason: reaper.EndRemoved}
	} else if err != nil {
		return fmt.Errorf("loading session %s: %w", s.id, err)
	}
	if reason, ok := reaper.BeingEnded(labels); ok {
		return &contract.SessionEndedError{ID: s.id, Reason: reason}
	}
	s.labels, s.paused = labels, labels[reaper.LabelSessionPaused] != ""
	return nil
}

// notPaused refuses a call that got the lock while the session was paused.
func (s *liveSession) notPaused(ctx context.Context) error {
	if err := s.reload(ctx); err != nil {
		return err
	}
	if s.paused {
		return &contract.SessionPausedError{ID: s.id}
	}
	return nil
}

// info describes the session as its labels say now.
func (s *liveSession) info() contract.Session {
	return sessionInfo(s.id, s.labels[reaper.LabelSession], s.rec, s.labels, reaper.LastUsed(s.labels, s.runDir))
}

// labelTime reads a label of Unix seconds.
func labelTime(labels map[string]string, key string) (time.Time, bool) {
	secs, err := strconv.ParseInt(labels[key], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}
