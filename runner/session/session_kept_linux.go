package session

// Snapshots kept of gVisor sessions, to make new sessions from (E2B's).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
)

// A kept snapshot is a directory of keptDir, named by the caller's name
// for it: image (the checkpoint), files (the session's files), run (its
// processes' notes and output) and kept.json, written last (a directory
// without it is one being made, or left by a crash, and is swept).
const (
	keptImage  = "image"
	keptFiles  = "files"
	keptRun    = "run"
	keptRecord = "kept.json"
	// maxKeptRecord bounds kept.json read back (Meta is the caller's
	// record of a sandbox, which its create body bounds).
	maxKeptRecord = 8 << 20
)

// keptRecord is what a kept snapshot holds beside its files.
type keptFile struct {
	Caller string        `json:"caller"`
	Made   time.Time     `json:"made"`
	Record sessionRecord `json:"record"`
	// Args are the first program's arguments it was checkpointed with.
	Args []string `json:"args"`
	Meta []byte   `json:"meta,omitempty"`
}

// validKeptName says whether name can name a kept snapshot: letters,
// digits and '-', at most 64.
func validKeptName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == ""
}

// SaveSnapshot keeps session id of caller's state as snapshot name: its
// checkpoint (taken while it is paused a moment, then it goes on; or its
// own, if it is checkpointed), its files and its processes' notes, and
// meta, the caller's. It answers the disk the snapshot holds.
func (r *Layer) SaveSnapshot(ctx context.Context, id, caller, name string, meta []byte) (_ int64, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	if !validKeptName(name) {
		return 0, contract.FieldErr("name", "must be letters, digits and '-', at most 64")
	}
	s, unlock, err := r.lockedSession(ctx, id, caller)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := r.checkpointable(ctx, s); err != nil {
		return 0, err
	}
	opCtx := context.WithoutCancel(ctx)
	spec, err := s.c.Spec(opCtx)
	if err != nil {
		return 0, fmt.Errorf("reading session %s: %w", s.id, err)
	}
	dir := filepath.Join(r.keptDir, name)
	if _, err := os.Stat(dir); err == nil {
		return 0, contract.FieldErr("name", "a snapshot %s exists", name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(dir)
		}
	}()
	for _, d := range []string{keptFiles, keptRun} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return 0, err
		}
	}
	img := filepath.Join(dir, keptImage)
	if s.labels[reaper.LabelSessionCheckpointed] != "" {
		if err := os.Mkdir(img, 0o700); err != nil {
			return 0, err
		}
		if err := copySessionFiles(r.checkpointDir(id), img); err != nil {
			return 0, fmt.Errorf("copying session %s's checkpoint: %w", id, err)
		}
	} else if err := r.checkpointLive(opCtx, s, img); err != nil {
		return 0, err
	}
	if err := copySessionFiles(reaper.FilesDir(s.runDir), filepath.Join(dir, keptFiles)); err != nil {
		return 0, fmt.Errorf("copying session %s's files: %w", id, err)
	}
	if err := keeper.CopyNotes(s.runDir, filepath.Join(dir, keptRun)); err != nil {
		return 0, fmt.Errorf("copying session %s's processes: %w", id, err)
	}
	if s.labels[reaper.LabelSessionCheckpointed] == "" {
		keeper.DropSavedOutputs(s.runDir)
	}
	rec, err := json.Marshal(keptFile{Caller: caller, Made: time.Now(), Record: s.rec, Args: spec.Process.Args, Meta: meta})
	if err != nil {
		return 0, err
	}
	if err := reaper.WriteFileAtomic(filepath.Join(dir, keptRecord), rec, 0o600); err != nil {
		return 0, err
	}
	done = true
	return diskUsed(dir), nil
}

// checkpointLive checkpoints running session s into img, pausing it for
// the moment: it goes on after.
func (r *Layer) checkpointLive(ctx context.Context, s *liveSession, img string) (err error) {
	task, err := s.loadTask(ctx)
	if err != nil {
		return err
	}
	if !s.paused {
		if err := task.Pause(ctx); err != nil {
			return &box.RuntimeError{Step: "pausing session", Err: err}
		}
		defer func() {
			if rerr := task.Resume(ctx); rerr != nil {
				err = errors.Join(err, &box.RuntimeError{Step: "resuming session", Err: rerr})
			}
		}()
	}
	return r.checkpointTask(ctx, s.id, img, false)
}

// diskUsed is the disk dir's regular files hold.
func diskUsed(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// readKept reads kept snapshot name of caller ("" for any).
func (r *Layer) readKept(name, caller string) (keptFile, error) {
	var k keptFile
	if !validKeptName(name) {
		return k, contract.ErrSnapshotNotFound
	}
	f, err := os.Open(filepath.Join(r.keptDir, name, keptRecord))
	if errors.Is(err, os.ErrNotExist) {
		return k, contract.ErrSnapshotNotFound
	}
	if err != nil {
		return k, err
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, maxKeptRecord)).Decode(&k); err != nil {
		return k, fmt.Errorf("reading snapshot %s: %w", name, err)
	}
	if caller != "" && k.Caller != caller {
		return keptFile{}, contract.ErrSnapshotNotFound
	}
	return k, nil
}

// Snapshots lists the snapshots kept for caller ("" for every caller's).
func (r *Layer) Snapshots(caller string) ([]contract.Kept, error) {
	entries, err := os.ReadDir(r.keptDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []contract.Kept
	for _, e := range entries {
		k, err := r.readKept(e.Name(), caller)
		if err != nil {
			continue
		}
		out = append(out, contract.Kept{Name: e.Name(), Caller: k.Caller, Made: k.Made, Bytes: diskUsed(filepath.Join(r.keptDir, e.Name())), Meta: k.Meta})
	}
	return out, nil
}

// RemoveSnapshot removes kept snapshot name of caller, and the disk it
// holds.
func (r *Layer) RemoveSnapshot(name, caller string) error {
	if _, err := r.readKept(name, caller); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(r.keptDir, name))
}

// SessionFromSnapshot makes a new session of caller restored from kept
// snapshot name: its interpreter's state, a copy of its files and its
// processes, with lifetime to live (within the session's backstop as it
// was made). held as for CreateSession.
func (r *Layer) SessionFromSnapshot(ctx context.Context, name, caller string, held bool, lifetime time.Duration, smax contract.SessionMaxima) (_ contract.Session, retErr error) {
	defer func() { retErr = r.Fault(ctx, retErr) }()
	k, err := r.readKept(name, caller)
	if err != nil {
		return contract.Session{}, err
	}
	release, err := r.sessionRoom(ctx, smax, caller, "", 1)
	if err != nil {
		return contract.Session{}, err
	}
	defer release()
	rec := k.Record
	rootfs, err := r.Rootfs(ctx, rec.Request)
	if err != nil {
		return contract.Session{}, err
	}
	now := time.Now()
	backstop := time.Time{}
	if !rec.Backstop.IsZero() {
		backstop = now.Add(rec.Backstop.Sub(rec.CreatedAt))
	}
	dir := filepath.Join(r.keptDir, name)
	sb := r.newSandbox(r.newSessionID(), rec.Request, false)
	sb.session = &sessionMeta{
		caller: caller, held: held, created: now, deadline: now.Add(lifetime),
		backstop: backstop, idle: rec.Idle, restore: filepath.Join(dir, keptImage), restoreArgs: k.Args,
		served: rec.ProcServer, first: rec.DriverFirst, driver: rec.Driver,
	}
	f := fork{sb: sb, rootfs: rootfs}
	info, err := r.makeFork(ctx, f, filepath.Join(dir, keptFiles), filepath.Join(dir, keptRun))
	if err != nil {
		return contract.Session{}, errors.Join(err, f.sb.destroy(ctx))
	}
	return info, nil
}

// makeFork prepares fork f with a copy of the files in files and the
// processes' notes in run, and restores it.
func (r *Layer) makeFork(ctx context.Context, f fork, files, run string) (contract.Session, error) {
	f.sb.LookUpView(ctx, f.rootfs)
	if err := f.sb.Prepare(); err != nil {
		return contract.Session{}, err
	}
	if err := copySessionFiles(files, reaper.FilesDir(f.sb.RunDir)); err != nil {
		return contract.Session{}, fmt.Errorf("copying the snapshot's files: %w", err)
	}
	if err := keeper.CopyNotes(run, f.sb.RunDir); err != nil {
		return contract.Session{}, fmt.Errorf("copying the snapshot's processes: %w", err)
	}
	return r.startFork(ctx, f)
}

// SweepKept removes what a SaveSnapshot left half made (no kept.json).
func (r *Layer) SweepKept(ctx context.Context) {
	entries, _ := os.ReadDir(r.keptDir)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < forkImageAge {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.keptDir, e.Name(), keptRecord)); errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(filepath.Join(r.keptDir, e.Name()))
		}
	}
}
