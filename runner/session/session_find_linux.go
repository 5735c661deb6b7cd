package session

// Finding a session: loading one for a call, listing the live ones.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// liveSession is a session loaded for a call.
type liveSession struct {
	id     string
	c      containerd.Container
	task   containerd.Task
	rec    sessionRecord
	runDir string
	// labels are its container's as it was loaded; paused, whether they
	// say it is paused.
	labels map[string]string
	paused bool
}

// loadSession finds session id of caller ("" for any caller) to use it,
// as findSession does, and refuses it while it is paused: its sandbox is
// frozen, and what would run in it would wait for the resume.
func (r *Layer) loadSession(ctx context.Context, id, caller string, forCall bool) (*liveSession, error) {
	s, err := r.findSession(ctx, id, caller, forCall)
	if err == nil && s.paused {
		return nil, &contract.SessionPausedError{ID: id}
	}
	return s, err
}

// findSession finds session id of caller ("" for any caller), ending it
// first if it is over. A call in an interpreted session skips asking
// containerd whether its sandbox runs: its wire says so.
func (r *Layer) findSession(ctx context.Context, id, caller string, forCall bool) (*liveSession, error) {
	if !validSessionID(id) {
		return nil, contract.ErrSessionNotFound
	}
	c, err := r.Containerd.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		if reason, ok := reaper.Ended(r.StateDir, r.Namespace, id, caller); ok {
			// Another process removed it: its record says why.
			return nil, &contract.SessionEndedError{ID: id, Reason: reason}
		}
		return nil, contract.ErrSessionNotFound
	} else if err != nil {
		return nil, fmt.Errorf("loading session: %w", err)
	}
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return nil, fmt.Errorf("loading session: %w", err)
	}
	owner, ok := info.Labels[reaper.LabelSession]
	if !ok || caller != "" && owner != caller {
		return nil, contract.ErrSessionNotFound
	}
	s := &liveSession{id: id, c: c, runDir: filepath.Join(r.RunsDir, id), labels: info.Labels, paused: info.Labels[reaper.LabelSessionPaused] != ""}
	recErr := s.readRecord()
	ask := !forCall || !interpreted(info.Labels[reaper.LabelSessionLang])
	if ask && recErr == nil && s.rec.ProcServer && info.Labels[reaper.LabelSessionCheckpointed] == "" && keeper.Serving(s.runDir) {
		// Its keeper exits with its process server, its first program:
		// one that answers says its sandbox runs, without asking
		// containerd (a command's every request would, 2 to 4 times).
		ask = false
	}
	if reason, _ := r.expire(ctx, c, info, ask); reason != "" {
		return nil, &contract.SessionEndedError{ID: id, Reason: reason}
	}
	if reaper.BeingMade(info.Labels) {
		// Its maker has not answered with it yet: it is not a session yet.
		return nil, contract.ErrSessionNotFound
	}
	if ask && info.Labels[reaper.LabelSessionCheckpointed] == "" {
		if s.task, err = c.Task(ctx, nil); errdefs.IsNotFound(err) {
			return nil, r.endSession(ctx, c, r.Exited(id))
		} else if err != nil {
			// A request cancelled, containerd busy: no answer about the
			// session, which must not end for it.
			return nil, fmt.Errorf("loading session %s's task: %w", id, err)
		}
	}
	if recErr != nil {
		// Read again: one being made when first read has it now.
		if recErr = s.readRecord(); recErr != nil {
			return nil, fmt.Errorf("reading session %s: %w", id, recErr)
		}
	}
	return s, nil
}

// readRecord reads session s's record (sessionRecord) from its run
// directory.
func (s *liveSession) readRecord() error {
	data, err := os.ReadFile(filepath.Join(s.runDir, sessionRecordFile))
	if err == nil {
		err = json.Unmarshal(data, &s.rec)
	}
	return err
}

// Sessions lists the live sessions of caller ("" for all), ending those
// that are over; those being made are not sessions yet.
func (r *Layer) Sessions(ctx context.Context, caller string) ([]contract.Session, error) {
	cs, err := r.Containerd.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	out := []contract.Session{}
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || caller != "" && info.Labels[reaper.LabelSession] != caller || reaper.BeingMade(info.Labels) {
			continue
		}
		if reason, _ := r.expire(ctx, c, info, true); reason != "" {
			continue
		}
		var rec sessionRecord
		data, err := os.ReadFile(filepath.Join(r.RunsDir, c.ID(), sessionRecordFile))
		if err != nil || json.Unmarshal(data, &rec) != nil {
			continue
		}
		used := reaper.LastUsed(info.Labels, filepath.Join(r.RunsDir, c.ID()))
		sess := sessionInfo(c.ID(), info.Labels[reaper.LabelSession], rec, info.Labels, used)
		owner := info.Labels[reaper.LabelOwner]
		sess.HeldElsewhere = owner != "" && owner != r.Owner && reaper.Alive(owner)
		out = append(out, sess)
	}
	return out, nil
}

// sessionInfo describes a session from its record and its container's
// labels (nil for one just made): they hold its deadline, which may have
// moved since its record was written, and whether it is paused.
func sessionInfo(id, caller string, rec sessionRecord, labels map[string]string, used time.Time) contract.Session {
	s := contract.Session{
		ID: id, Lang: rec.Request.Lang, Runtime: rec.Request.Runtime, Image: rec.Request.ImageName(),
		CreatedAt: rec.CreatedAt.UTC().Truncate(time.Second), Made: rec.CreatedAt.UTC(), ExpiresAt: rec.Deadline.UTC().Truncate(time.Second),
		LastUsed: used.UTC().Truncate(time.Second), IdleTimeout: contract.Seconds(rec.Idle),
		Interpreter: interpreted(rec.Request.Lang), Caller: caller,
	}
	if d, ok := labelTime(labels, reaper.LabelSessionDeadline); ok {
		s.ExpiresAt = d.UTC()
	}
	if p, ok := labelTime(labels, reaper.LabelSessionPaused); ok {
		p = p.UTC()
		s.Paused, s.PausedAt = true, &p
	}
	s.Checkpointed = labels[reaper.LabelSessionCheckpointed] != ""
	return s
}
