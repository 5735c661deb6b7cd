package session

// Forks of a gVisor session: new sessions restored from its checkpoint.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
)

// fork is a session being made from another's checkpoint.
type fork struct {
	sb     *sandbox
	rootfs snapshots.Rootfs
}

// restoreOpts are the task options of a sandbox restored from a
// checkpoint (a fork), nil for any other.
func (sb *sandbox) restoreOpts() []containerd.NewTaskOpts {
	if sb.session == nil || sb.session.restore == "" {
		return nil
	}
	return []containerd.NewTaskOpts{containerd.WithRestoreImagePath(sb.session.restore)}
}

// prepareForks makes the host side of n forks of session s, each with a
// copy of its files, and returns them with the checkpoint they are to be
// restored from (img): its own, or one taken now while it is paused, so
// that the files copied are the checkpoint's.
func (r *Layer) prepareForks(ctx context.Context, s *liveSession, n int, held bool) (forks []fork, img string, err error) {
	opCtx := context.WithoutCancel(ctx)
	spec, err := s.c.Spec(opCtx)
	if err != nil {
		return nil, "", fmt.Errorf("reading session %s: %w", s.id, err)
	}
	img = r.checkpointDir(s.id)
	live := s.labels[reaper.LabelSessionCheckpointed] == ""
	if live {
		task, err := s.loadTask(ctx)
		if err != nil {
			return nil, "", err
		}
		if !s.paused {
			if err := task.Pause(opCtx); err != nil {
				return nil, "", &box.RuntimeError{Step: "pausing session", Err: err}
			}
			defer func() {
				if rerr := task.Resume(opCtx); rerr != nil {
					err = errors.Join(err, &box.RuntimeError{Step: "resuming session", Err: rerr})
				}
			}()
		}
		img = r.newForkImage(s.id)
		if err := r.checkpointTask(opCtx, s.id, img, false); err != nil {
			_ = os.RemoveAll(img)
			return nil, "", err
		}
	}
	rootfs, err := r.Rootfs(ctx, s.rec.Request)
	if err != nil {
		return nil, img, err
	}
	now := time.Now()
	for range n {
		sb := r.newSandbox(r.newSessionID(), s.rec.Request, false)
		sb.session = &sessionMeta{
			caller: s.labels[reaper.LabelSession], held: held, created: now, deadline: s.deadline(),
			backstop: s.rec.Backstop, idle: s.rec.Idle, restore: img, restoreArgs: spec.Process.Args,
			served: s.rec.ProcServer, first: s.rec.DriverFirst, driver: s.rec.Driver,
		}
		forks = append(forks, fork{sb: sb, rootfs: rootfs})
		sb.LookUpView(ctx, rootfs)
		if err := sb.Prepare(); err != nil {
			return forks, img, err
		}
		if err := copySessionFiles(reaper.FilesDir(s.runDir), reaper.FilesDir(sb.RunDir)); err != nil {
			return forks, img, fmt.Errorf("copying session %s's files: %w", s.id, err)
		}
		if err := keeper.CopyNotes(s.runDir, sb.RunDir); err != nil {
			return forks, img, fmt.Errorf("copying session %s's processes: %w", s.id, err)
		}
	}
	if live {
		// Its own keeper goes on holding what it saved for the forks.
		keeper.DropSavedOutputs(s.runDir)
	}
	return forks, img, nil
}

// startFork restores a prepared fork from its checkpoint and marks it
// made, as openSession does a new session.
func (r *Layer) startFork(ctx context.Context, f fork) (contract.Session, error) {
	sb := f.sb
	if err := sb.Create(ctx, f.rootfs); err != nil {
		return contract.Session{}, err
	}
	p, err := contract.LookupPreset(sb.Req.Lang)
	if err != nil {
		return contract.Session{}, err
	}
	if err := sb.writeSupport(p); err != nil {
		return contract.Session{}, err
	}
	if err := sb.writeForkRecord(); err != nil {
		return contract.Session{}, err
	}
	if err := sb.To(box.StateRunning, box.StateCreated); err != nil {
		return contract.Session{}, err
	}
	opCtx := context.WithoutCancel(ctx)
	err = sb.Task.Start(opCtx)
	sb.Task.IO().Close()
	if err != nil {
		return contract.Session{}, &box.RuntimeError{Step: "restoring a fork", Err: err}
	}
	if err := r.VerifyLimits(sb.ID, sb.Limits); err != nil {
		return contract.Session{}, err
	}
	now := time.Now()
	if err := reaper.TouchSession(sb.RunDir, now); err != nil {
		return contract.Session{}, fmt.Errorf("writing session record: %w", err)
	}
	made := map[string]string{reaper.LabelSessionMade: "true"}
	if !sb.session.held {
		made[reaper.LabelOwner] = ""
	}
	if _, err := sb.Container.SetLabels(opCtx, made); err != nil {
		return contract.Session{}, fmt.Errorf("marking session made: %w", err)
	}
	if len(r.keeper) > 0 && !sb.session.held {
		if _, err := r.SpawnKeeper(sb.RunDir, sb.ID, keeper.Handoff{}); err != nil {
			return contract.Session{}, err
		}
	}
	rec := sessionRecord{Request: sb.Req, Idle: sb.session.idle, CreatedAt: now, Deadline: sb.session.deadline}
	return sessionInfo(sb.ID, sb.session.caller, rec, nil, now), nil
}

// destroyAll removes forks that were not all made.
func destroyAll(ctx context.Context, forks []fork) error {
	var errs []error
	for _, f := range forks {
		errs = append(errs, f.sb.destroy(ctx))
	}
	return errors.Join(errs...)
}

// copySessionFiles copies a session's files tmpfs (src) into a fork's
// (dst): directories, regular files and symbolic links, with their
// modes and owners, never following a link; what else the sandbox made
// (FIFOs, sockets) carries no state and is left out. Both are roots: a
// name in the sandbox's files cannot lead out of either.
func copySessionFiles(src, dst string) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	return fs.WalkDir(from.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			// workspace, tmp, home and home/user are made already.
			if err := to.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if err := to.Chmod(p, mode&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid)); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			target, err := from.Readlink(p)
			if err != nil {
				return err
			}
			if err := to.Symlink(target, p); err != nil {
				return err
			}
		case mode.IsRegular():
			if err := copyFileIn(from, to, p, mode.Perm()); err != nil {
				return err
			}
		default:
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		return to.Lchown(p, int(st.Uid), int(st.Gid))
	})
}

// copyFileIn copies regular file name of from to to.
func copyFileIn(from, to *os.Root, name string, perm fs.FileMode) error {
	// Without waiting on what the sandbox may have swapped in meanwhile:
	// what is no regular file once open is left out.
	in, err := from.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
		return err
	}
	out, err := to.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = to.Chmod(name, perm)
	}
	return err
}
