package session

// A session's files anywhere it may write, through package sessionfs.

// Each call finds the session of its caller (a use of it: its idle time
// starts again), then does its operation on the session's files.

import (
	"context"
	"io"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/sessionfs"
)

// withFiles opens session id of caller for its files, counts it used and
// runs fn.
func (r *Layer) withFiles(ctx context.Context, id, caller string, fn func(*sessionfs.Files) error) error {
	s, err := r.loadSession(ctx, id, caller, false)
	if err != nil {
		return err
	}
	f, err := sessionfs.Open(s.runDir, s.rec.Request.UID, s.rec.Request.GID)
	if err != nil {
		return err
	}
	defer f.Close()
	s.touch(ctx, time.Now())
	return fn(f)
}

// sessionOp parses p (field path) and runs fn on session id's files: a
// bad path is told before a missing session.
func (r *Layer) sessionOp(ctx context.Context, id, caller, p string, fn func(*sessionfs.Files, sessionfs.Path) error) error {
	sp, err := sessionfs.Parse(contract.FieldPath, p)
	if err != nil {
		return err
	}
	return r.withFiles(ctx, id, caller, func(f *sessionfs.Files) error { return fn(f, sp) })
}

// ReadSessionPath returns the regular file at p (an absolute path in
// session id of caller), of at most limit bytes.
func (r *Layer) ReadSessionPath(ctx context.Context, id, caller, p string, limit int64) (data []byte, err error) {
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		data, err = f.Read(sp, limit)
		return err
	})
	return data, err
}

// WriteSessionPath writes what data holds to the file at p in session id
// of caller, making it and the directories it lacks, the sandbox user's.
func (r *Layer) WriteSessionPath(ctx context.Context, id, caller, p string, data io.Reader) (e contract.FileEntry, err error) {
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		e, err = f.Write(sp, data)
		return err
	})
	return e, err
}

// SetSessionMetadata replaces the metadata of the regular file at p in
// session id of caller (none: it keeps none) and describes the file.
func (r *Layer) SetSessionMetadata(ctx context.Context, id, caller, p string, md map[string]string) (e contract.FileEntry, err error) {
	if err := contract.CheckFileMetadata(md); err != nil {
		return contract.FileEntry{}, err
	}
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		e, err = f.SetMeta(sp, md)
		return err
	})
	return e, err
}

// StatSessionPath describes what p names in session id of caller; a
// symlink is described, not followed.
func (r *Layer) StatSessionPath(ctx context.Context, id, caller, p string) (e contract.FileEntry, err error) {
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		e, err = f.Stat(sp)
		return err
	})
	return e, err
}

// ListSessionDir lists the directory p of session id of caller, and the
// directories in it down to depth levels (1: its own entries only),
// sorted by path.
func (r *Layer) ListSessionDir(ctx context.Context, id, caller, p string, depth int) (out []contract.FileEntry, err error) {
	if depth < 1 {
		return nil, contract.FieldErr("depth", "must be at least 1, not %d", depth)
	}
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		out, err = f.List(sp, depth)
		return err
	})
	return out, err
}

// MakeSessionDir makes the directory p in session id of caller with the
// parents it lacks, the sandbox user's, and says whether it made it (false:
// it was there).
func (r *Layer) MakeSessionDir(ctx context.Context, id, caller, p string) (e contract.FileEntry, made bool, err error) {
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		e, made, err = f.Mkdir(sp)
		return err
	})
	return e, made, err
}

// MoveSessionPath renames from to to in session id of caller, from any of
// its roots to any other.
func (r *Layer) MoveSessionPath(ctx context.Context, id, caller, from, to string) (e contract.FileEntry, err error) {
	dst, err := sessionfs.Parse("to", to)
	if err != nil {
		return contract.FileEntry{}, err
	}
	err = r.sessionOp(ctx, id, caller, from, func(f *sessionfs.Files, src sessionfs.Path) error {
		e, err = f.Move(src, dst)
		return err
	})
	return e, err
}

// RemoveSessionPath removes what p names in session id of caller, a
// directory with all it holds; a symlink is removed, not followed.
func (r *Layer) RemoveSessionPath(ctx context.Context, id, caller, p string) error {
	return r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		return f.Remove(sp)
	})
}

// WatchSessionDir watches the directory p of session id of caller (and,
// recursive, the directories under it, those made later too) and
// returns its events until ctx ends or the session does. It returns once
// the directory is watched: what changes after that is told. Each watch
// is an inotify instance of the host's root: past the caller's ceiling,
// or the server's, it is refused with a LimitError.
func (r *Layer) WatchSessionDir(ctx context.Context, id, caller, p string, recursive bool) (sw *contract.SessionWatch, err error) {
	err = r.sessionOp(ctx, id, caller, p, func(f *sessionfs.Files, sp sessionfs.Path) error {
		release, err := r.holdWatch(caller)
		if err != nil {
			return err
		}
		alive := func(ctx context.Context) error {
			_, err := r.loadSession(ctx, id, caller, false)
			return err
		}
		if sw, err = f.Watch(ctx, sp, recursive, alive, release); err != nil {
			release()
		}
		return err
	})
	return sw, err
}
