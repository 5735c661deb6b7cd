package runner

// Ending a session: expiry, removal, and the end a call or its holder brings.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/log"
)

// expire ends c if it is over, and says why ("" if it lives).
func (r *Runner) expire(ctx context.Context, c containerd.Container) string {
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return ""
	}
	return r.expireInfo(ctx, c, info, true)
}

// expireInfo is expire for c, whose info is at hand; ask says whether to
// ask containerd whether its sandbox runs.
func (r *Runner) expireInfo(ctx context.Context, c containerd.Container, info containers.Container, ask bool) string {
	var runs func() bool
	if ask {
		runs = func() bool { return running(ctx, c) }
	}
	used := reaper.LastUsed(info.Labels, filepath.Join(r.runsDir, c.ID()))
	reason := reaper.SessionEnd(info.Labels, used, time.Now(), runs)
	if reason == "" && ask && info.Labels[reaper.LabelOwner] == r.owner && !running(ctx, c) {
		// Held by this process: its sandbox ended (it is made by now).
		reason = reaper.EndExited
	}
	if reason != "" {
		_ = r.endSession(ctx, c, reason)
	}
	return reason
}

// running says whether c's task runs.
func running(ctx context.Context, c containerd.Container) bool {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return false
	}
	st, err := task.Status(ctx)
	return err == nil && st.Status == containerd.Running
}

// endSession removes a session's sandbox and returns a SessionEndedError
// that says why.
func (r *Runner) endSession(ctx context.Context, c containerd.Container, reason string) error {
	if err := r.destroyLeftover(ctx, c); err != nil {
		log.G(ctx).WithError(err).Warnf("removing session %s", c.ID())
	}
	return &SessionEndedError{ID: c.ID(), Reason: reason}
}

// RemoveSession ends a session of caller ("" for any).
func (r *Runner) RemoveSession(ctx context.Context, id, caller string) error {
	s, err := r.loadSession(ctx, id, caller, false)
	var ended *SessionEndedError
	if errors.As(err, &ended) {
		return nil
	} else if err != nil {
		return err
	}
	if err := r.destroyLeftover(ctx, s.c); err != nil {
		return fmt.Errorf("removing session %s: %w", id, err)
	}
	return nil
}

// ExpireSessions ends every session that is over (a server calls it on a
// timer: the idle timeout holds without a call) and returns them.
func (r *Runner) ExpireSessions(ctx context.Context) []EndedSession {
	cs, err := r.client.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return nil
	}
	var ended []EndedSession
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		if reason := r.expire(ctx, c); reason != "" {
			ended = append(ended, EndedSession{ID: c.ID(), Caller: info.Labels[reaper.LabelSession], Reason: reason})
		}
	}
	return ended
}

// CloseSessions ends the sessions this process holds whose caller is
// caller ("" for all), for reason (a client that disconnected, a server
// that shuts down), and returns them.
func (r *Runner) CloseSessions(ctx context.Context, caller, reason string) []EndedSession {
	// One filter, its selectors joined by a comma: containerd ORs
	// separate filters, which would match every sandbox of this process.
	cs, err := r.client.Containers(ctx, `labels."`+reaper.LabelSession+`",labels."`+reaper.LabelOwner+`"==`+strconv.Quote(r.owner))
	if err != nil {
		return nil
	}
	var ended []EndedSession
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || caller != "" && info.Labels[reaper.LabelSession] != caller {
			continue
		}
		_ = r.endSession(ctx, c, reason)
		ended = append(ended, EndedSession{ID: c.ID(), Caller: info.Labels[reaper.LabelSession], Reason: reason})
	}
	return ended
}

// checkAlive ends the session if a call ended its interpreter or its
// sandbox, and says why.
func (r *Runner) checkAlive(ctx context.Context, s *liveSession) string {
	reason := ""
	task, err := s.loadTask(ctx)
	if err == nil {
		var st containerd.Status
		if st, err = task.Status(ctx); err == nil && st.Status != containerd.Running {
			err = errors.New("not running")
		}
	}
	if err != nil {
		reason = reaper.EndExited
	} else if interpreted(s.rec.Request.Lang) {
		driver, err := task.LoadProcess(ctx, driverExecID, nil)
		if err == nil {
			var st containerd.Status
			if st, err = driver.Status(ctx); err == nil && st.Status != containerd.Running {
				err = errors.New("exited")
			}
		}
		if err != nil {
			reason = reaper.EndInterpreter
		}
	}
	if reason != "" {
		_ = r.endSession(ctx, s.c, reason)
	}
	return reason
}
