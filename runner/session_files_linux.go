package runner

// A session's files: reading, writing and copying its workspace's files.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sessionWorkspace opens session id's workspace for caller, and returns
// the session's request with the host's ids of its user (see hostIDsOf):
// whose files boxer writes there are.
func (r *Runner) sessionWorkspace(ctx context.Context, id, caller string) (*os.Root, Request, error) {
	s, err := r.loadSession(ctx, id, caller, false)
	if err != nil {
		return nil, Request{}, err
	}
	root, err := os.OpenRoot(sessionWorkspaceDir(s.runDir))
	if err != nil {
		return nil, Request{}, fmt.Errorf("opening session workspace: %w", err)
	}
	s.touch(ctx, time.Now())
	req := s.rec.Request
	if req.UID, req.GID, err = hostIDsOf(s.runDir, req.UID, req.GID); err != nil {
		root.Close()
		return nil, Request{}, err
	}
	return root, req, nil
}

// checkSessionPath refuses a path that is not relative to /workspace.
func checkSessionPath(rel string) error {
	if rel == "" || !filepath.IsLocal(rel) || strings.ContainsRune(rel, 0) {
		return fieldErr(FieldFiles, "%q must be a path relative to /workspace", rel)
	}
	return nil
}

// ReadSessionFile returns a regular file of session id's workspace, of at
// most limit bytes. Every read goes through the workspace's root: a
// sandbox that swaps a directory for a symlink meanwhile cannot lead it out.
func (r *Runner) ReadSessionFile(ctx context.Context, id, caller, rel string, limit int64) ([]byte, error) {
	if err := checkSessionPath(rel); err != nil {
		return nil, err
	}
	root, _, err := r.sessionWorkspace(ctx, id, caller)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, ErrFileNotFound
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, ErrFileNotFound
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, fieldErr(FieldFiles, "%s is larger than %d bytes, the most that can be read at once", rel, limit)
	}
	return data, nil
}

// WriteSessionFile writes a file into session id's workspace, owned by
// the sandbox's user.
func (r *Runner) WriteSessionFile(ctx context.Context, id, caller, rel string, data []byte) error {
	if err := checkSessionPath(rel); err != nil {
		return err
	}
	root, req, err := r.sessionWorkspace(ctx, id, caller)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeFilesRoot(root, map[string][]byte{rel: data}, req.UID, req.GID)
}

// CopyToSession copies a host file or directory to dest in session id's
// workspace (a directory's contents go into dest).
func (r *Runner) CopyToSession(ctx context.Context, id, src, dest string) error {
	if dest != "." {
		if err := checkSessionPath(dest); err != nil {
			return err
		}
	}
	root, req, err := r.sessionWorkspace(ctx, id, "")
	if err != nil {
		return err
	}
	defer root.Close()
	st, err := os.Stat(src)
	if err != nil {
		return fieldErr(FieldCopyIn, "%s: %v", src, err)
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return fieldErr(FieldCopyIn, "%s is not a regular file or a directory", src)
		}
		if st.Size() > req.TmpBytes {
			return fieldErr(FieldCopyIn, "%s holds %d bytes, more than the workspace's %d", src, st.Size(), req.TmpBytes)
		}
		if dir := filepath.Dir(dest); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("copying in: %w", err)
			}
		}
		if err := copyFile(root, dest, src, st.Mode().Perm()); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("copying in %s: %w", dest, err)
		} else if errors.Is(err, os.ErrExist) {
			return fieldErr(FieldCopyIn, "%s exists in the session: remove it first", dest)
		}
		return root.Lchown(dest, int(req.UID), int(req.GID))
	}
	if err := checkTree(src, req.TmpBytes); err != nil {
		return err
	}
	if dest != "." {
		if err := root.MkdirAll(dest, 0o755); err != nil {
			return fmt.Errorf("copying in: %w", err)
		}
		_ = root.Lchown(dest, int(req.UID), int(req.GID))
	}
	sub, err := root.OpenRoot(dest)
	if err != nil {
		return fmt.Errorf("copying in: %w", err)
	}
	defer sub.Close()
	return copyInto(src, sub, req.UID, req.GID)
}

// CopyFromSession copies src (a file or directory of session id's
// workspace) to the host path dst, with copy-out's safety: regular files
// and directories only, at most the workspace's size.
func (r *Runner) CopyFromSession(ctx context.Context, id, src, dst string) ([]File, int, error) {
	if src != "." {
		if err := checkSessionPath(src); err != nil {
			return nil, 0, err
		}
	}
	root, req, err := r.sessionWorkspace(ctx, id, "")
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	st, err := root.Lstat(src)
	if err != nil {
		return nil, 0, ErrFileNotFound
	}
	if st.Mode().IsRegular() {
		in, err := root.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, 0, ErrFileNotFound
		}
		defer in.Close()
		if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
			return nil, 0, ErrFileNotFound
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, 0, fmt.Errorf("copying out: %w", err)
		}
		n, err := io.Copy(out, io.LimitReader(in, req.TmpBytes))
		if err := errors.Join(err, out.Close()); err != nil {
			return nil, 0, fmt.Errorf("copying out: %w", err)
		}
		return []File{{Path: src, Size: n}}, 0, nil
	}
	if !st.IsDir() {
		return nil, 0, ErrFileNotFound
	}
	sub, err := root.OpenRoot(src)
	if err != nil {
		return nil, 0, fmt.Errorf("copying out: %w", err)
	}
	defer sub.Close()
	return copyOutOf(sub, dst, req.TmpBytes)
}
