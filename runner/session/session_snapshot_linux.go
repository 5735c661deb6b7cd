package session

// Checkpoints of gVisor sessions: to disk and back, and forks.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/containerd/containerd/api/services/tasks/v1"
	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/containerd/log"
	"github.com/containerd/typeurl/v2"
)

// A session on gVisor can be checkpointed: runsc saves its sandbox (the
// interpreter's memory, its /dev/shm, the kernel's state) to an image on
// disk, under boxer's root, and the sandbox ends, its memory freed. Its
// files stay where they are, in its files tmpfs on the host, which gVisor
// walks again at the restore. It is then paused and checkpointed (two
// labels), so that every boxer process leaves it alone without a task,
// and ResumeSession restores it from the image into the same container.
// A fork restores a checkpoint (the session's own, or one taken for the
// fork while it keeps running) into new sessions, each with a copy of its
// files: the same interpreter state, and nothing shared after.
//
// What comes back is what the session's first program holds: on a
// restore, gVisor kills every process exec'd into the sandbox, so only a
// session whose processes (and interpreter) are its process server's, or
// whose interpreter is its first program (sessionMeta's first: then not
// while a process it started runs), can be checkpointed. A session with
// network or secrets cannot: its link would not come back, and the image
// would hold its secrets on disk. runc would need CRIU, which boxer does
// not use (docs/runtimes.md).

// checkpointDir is where session id's checkpoint is kept.
func (r *Layer) checkpointDir(id string) string { return filepath.Join(r.checkpointsDir, id) }

// checkpointable says why session s cannot be checkpointed, nil if it can.
func (r *Layer) checkpointable(ctx context.Context, s *liveSession) error {
	req := s.rec.Request
	switch {
	case req.Runtime != "runsc":
		return &contract.CheckpointError{ID: s.id, Why: "it runs on runc, and checkpoints need gVisor (--runtime runsc): runc would need CRIU, which boxer does not use"}
	case !s.rec.DriverFirst && !s.rec.ProcServer:
		return &contract.CheckpointError{ID: s.id, Why: "it was made by a boxer before the process server, and a checkpoint keeps only its first program's processes: a python or python-data session, or one made since, can be"}
	case req.HasEgress():
		return &contract.CheckpointError{ID: s.id, Why: "it has network (allow_hosts), whose link a restore would not bring back"}
	case len(req.Secrets) > 0:
		return &contract.CheckpointError{ID: s.id, Why: "it has secrets, which its image on disk would hold"}
	}
	kc := keeper.NewClient(filepath.Join(s.runDir, keeper.Sock))
	if s.rec.ProcServer || !kc.Alive(ctx) {
		// The process server's processes are its first program's
		// children, which a checkpoint keeps.
		return nil
	}
	var ps []contract.ProcessInfo
	if err := kc.Call(ctx, "GET", "/processes", nil, nil, &ps); err != nil {
		return err
	}
	for _, p := range ps {
		if p.Running {
			return &contract.CheckpointError{ID: s.id, Why: fmt.Sprintf("process %d (%s) runs, and gVisor ends every process started with exec at a restore: kill it first", p.ID, strings.Join(p.Args, " "))}
		}
	}
	return nil
}

// checkpointTask saves session id's sandbox to dir through containerd's
// task service (the client's Task.Checkpoint would then commit the root's
// snapshot, which a view cannot be); with exit, the sandbox ends once
// saved.
func (r *Layer) checkpointTask(ctx context.Context, id, dir string, exit bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Its processes' output so far, for the keepers after the restore.
	if err := r.SaveOutputs(ctx, filepath.Join(r.RunsDir, id)); err != nil {
		log.G(ctx).WithError(err).Warnf("session %s: keeping its processes' output", id)
	}
	opts, err := typeurl.MarshalAnyToProto(&runcoptions.CheckpointOptions{ImagePath: dir, Exit: exit})
	if err != nil {
		return err
	}
	if _, err := r.Containerd.TaskService().Checkpoint(ctx, &tasks.CheckpointTaskRequest{ContainerID: id, Options: opts}); err != nil {
		return &box.RuntimeError{Step: "checkpointing session", Err: errgrpc.ToNative(err)}
	}
	return nil
}

// CheckpointSession saves session id of caller ("" for any) to disk and
// ends its sandbox: it stays paused, using no memory, until ResumeSession
// restores it. Checkpointing a checkpointed session changes nothing.
func (r *Layer) CheckpointSession(ctx context.Context, id, caller string) (_ contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	s, unlock, err := r.lockedSession(ctx, id, caller)
	if err != nil {
		return contract.Session{}, err
	}
	defer unlock()
	if s.labels[reaper.LabelSessionCheckpointed] != "" {
		return s.info(), nil
	}
	if err := r.checkpointable(ctx, s); err != nil {
		return contract.Session{}, err
	}
	task, err := s.loadTask(ctx)
	if err != nil {
		return contract.Session{}, err
	}
	opCtx := context.WithoutCancel(ctx)
	exited, err := task.Wait(opCtx)
	if err != nil {
		return contract.Session{}, fmt.Errorf("watching session %s: %w", id, err)
	}
	// A frozen sandbox would stay so once saved, and gVisor cannot
	// signal it: it is thawed for the moment the checkpoint takes to
	// start (the checkpoint stops it again to save it), and frozen again
	// should the checkpoint fail.
	frozen := false
	refreeze := func() {
		if !frozen {
			return
		}
		if err := task.Pause(opCtx); err != nil {
			log.G(ctx).WithError(err).Warnf("freezing session %s again", id)
		}
	}
	if st, err := task.Status(opCtx); err == nil && (st.Status == containerd.Paused || st.Status == containerd.Pausing) {
		if err := task.Resume(opCtx); err != nil {
			return contract.Session{}, &box.RuntimeError{Step: "thawing session to checkpoint it", Err: err}
		}
		frozen = true
	}
	// Marked before its task goes: no boxer process may take it for a
	// session whose sandbox exited.
	now := strconv.FormatInt(time.Now().Unix(), 10)
	marks := map[string]string{reaper.LabelSessionCheckpointed: now}
	if !s.paused {
		marks[reaper.LabelSessionPaused] = now
	}
	if s.labels, err = s.c.SetLabels(opCtx, marks); err != nil {
		refreeze()
		return contract.Session{}, fmt.Errorf("marking session %s checkpointed: %w", id, err)
	}
	dir := r.checkpointDir(id)
	_ = os.RemoveAll(dir)
	if err := r.checkpointTask(opCtx, id, dir, true); err != nil {
		refreeze()
		for k := range marks {
			marks[k] = ""
		}
		if _, lerr := s.c.SetLabels(opCtx, marks); lerr != nil {
			log.G(ctx).WithError(lerr).Warnf("unmarking session %s checkpointed", id)
		}
		_ = os.RemoveAll(dir)
		return contract.Session{}, err
	}
	select {
	case <-exited:
	case <-time.After(reaper.CleanupTimeout):
		// Saved: whatever still runs of it goes.
		log.G(ctx).Warnf("session %s: its sandbox did not end once checkpointed", id)
	}
	_, err = task.Delete(opCtx)
	if errdefs.IsFailedPrecondition(err) {
		_, err = task.Delete(opCtx, containerd.WithProcessKill)
	}
	if err != nil && !errdefs.IsNotFound(err) {
		return contract.Session{}, fmt.Errorf("ending checkpointed session %s's sandbox: %w", id, err)
	}
	return s.info(), nil
}

// lockedSession finds session id of caller, paused or not, and takes its
// call lock.
func (r *Layer) lockedSession(ctx context.Context, id, caller string) (*liveSession, func(), error) {
	s, err := r.findSession(ctx, id, caller, false)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := s.reload(ctx); err != nil {
		unlock()
		return nil, nil, err
	}
	return s, unlock, nil
}

// restoreSession brings checkpointed session s back from its image, into
// its own container, and removes the image.
func (r *Layer) restoreSession(ctx context.Context, s *liveSession) error {
	dir := r.checkpointDir(s.id)
	// The first program's FIFOs (the wire's, or its process server's)
	// are made anew for the new task.
	streams := keeper.WireCreator(s.runDir)
	if s.rec.ProcServer {
		streams = keeper.ServerCreator(s.runDir)
	}
	if err := keeper.RemoveFIFOs(s.runDir); err != nil {
		return err
	}
	task, err := s.c.NewTask(ctx, streams, containerd.WithRestoreImagePath(dir))
	if err != nil {
		return &box.RuntimeError{Step: "restoring session", Err: err}
	}
	err = task.Start(ctx)
	task.IO().Close()
	if err != nil {
		_, _ = task.Delete(ctx, containerd.WithProcessKill)
		return &box.RuntimeError{Step: "restoring session", Err: err}
	}
	s.task = task
	if err := os.RemoveAll(dir); err != nil {
		log.G(ctx).WithError(err).Warnf("removing session %s's checkpoint", s.id)
	}
	return nil
}

// resumeCheckpointed restores checkpointed session s, and lets it run.
func (r *Layer) resumeCheckpointed(ctx context.Context, s *liveSession) (contract.Session, error) {
	opCtx := context.WithoutCancel(ctx)
	// Used now before the labels go: its idle time starts again.
	s.touch(ctx, time.Now())
	if err := r.restoreSession(opCtx, s); err != nil {
		return contract.Session{}, err
	}
	var err error
	if s.labels, err = s.c.SetLabels(opCtx, map[string]string{reaper.LabelSessionCheckpointed: "", reaper.LabelSessionPaused: ""}); err != nil {
		return contract.Session{}, fmt.Errorf("marking session %s resumed: %w", s.id, err)
	}
	s.paused = false
	if len(r.keeper) > 0 && s.labels[reaper.LabelOwner] == "" {
		// Its keeper ended with its sandbox; one that lives on its own
		// needs one to end on time.
		if _, err := r.SpawnKeeper(s.runDir, s.id, keeper.Handoff{}); err != nil {
			log.G(ctx).WithError(err).Warn("starting the session's keeper")
		}
	}
	return s.info(), nil
}

// ForkSession makes n new sessions of caller from session id's state:
// its checkpoint if it is checkpointed, else one taken for the fork while
// it is paused for a moment (then it goes on). Each fork has the
// session's interpreter state and a copy of its files, and its own
// lifetime: the session's time left. held as for CreateSession.
func (r *Layer) ForkSession(ctx context.Context, id, caller string, n int, held bool, smax contract.SessionMaxima) (_ []contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	if n < 1 || n > contract.MaxForks {
		return nil, contract.FieldErr(contract.FieldCount, "must be from 1 to %d, not %d", contract.MaxForks, n)
	}
	s, unlock, err := r.lockedSession(ctx, id, caller)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := r.checkpointable(ctx, s); err != nil {
		return nil, err
	}
	release, err := r.sessionRoom(ctx, smax, caller, "", n)
	if err != nil {
		return nil, err
	}
	defer release()
	forks, img, err := r.prepareForks(ctx, s, n, held)
	if img != "" && img != r.checkpointDir(id) {
		// Taken for this fork: once restored, it is not needed.
		defer os.RemoveAll(img)
	}
	if err != nil {
		return nil, errors.Join(err, destroyAll(ctx, forks))
	}
	out := make([]contract.Session, 0, n)
	for _, f := range forks {
		info, err := r.startFork(ctx, f)
		if err != nil {
			return nil, errors.Join(err, destroyAll(ctx, forks))
		}
		out = append(out, info)
	}
	return out, nil
}

// newForkImage names a checkpoint taken for a fork of session id.
func (r *Layer) newForkImage(id string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return filepath.Join(r.checkpointsDir, id+".fork-"+hex.EncodeToString(b))
}

// sessionDeadline is session s's deadline, as its label says.
func (s *liveSession) deadline() time.Time {
	if d, ok := labelTime(s.labels, reaper.LabelSessionDeadline); ok {
		return d
	}
	return s.rec.Deadline
}

// writeForkRecord writes a fork's session record.
func (sb *sandbox) writeForkRecord() error {
	rec, err := json.Marshal(sessionRecord{Request: sb.Req, Idle: sb.session.idle, CreatedAt: sb.session.created, Deadline: sb.session.deadline, Backstop: sb.session.backstop, DriverFirst: sb.session.first, ProcServer: sb.session.served, Driver: sb.session.driver})
	if err != nil {
		return err
	}
	if err := reaper.WriteFileAtomic(filepath.Join(sb.RunDir, sessionRecordFile), rec, 0o600); err != nil {
		return fmt.Errorf("writing session record: %w", err)
	}
	return nil
}

// forkImageAge is how old a checkpoint taken for a fork is when the sweep
// takes its fork for dead: a fork takes seconds.
const forkImageAge = 10 * time.Minute

// SweepCheckpoints removes the checkpoints of sessions whose run directory
// is gone, and those taken for forks that did not remove them.
func (r *Layer) SweepCheckpoints(ctx context.Context) {
	entries, err := os.ReadDir(r.checkpointsDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		id, forked := e.Name(), false
		if i := strings.Index(e.Name(), ".fork-"); i >= 0 {
			id, forked = e.Name()[:i], true
		}
		gone := false
		if _, err := os.Stat(filepath.Join(r.RunsDir, id)); errors.Is(err, os.ErrNotExist) {
			gone = true
		} else if info, err := e.Info(); forked && err == nil && time.Since(info.ModTime()) > forkImageAge {
			gone = true
		}
		if gone {
			if err := os.RemoveAll(filepath.Join(r.checkpointsDir, e.Name())); err != nil {
				log.G(ctx).WithError(err).Warn("sweeping checkpoints")
			}
		}
	}
}
