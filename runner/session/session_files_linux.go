package session

// A session's files: reading, writing and copying its workspace's files.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/runner/sessionfs"
	"golang.org/x/sys/unix"
)

// sessionWorkspace opens session id's workspace for caller, and returns
// the session's request with the host's ids of its user (see hostIDsOf):
// whose files boxer writes there are.
func (r *Layer) sessionWorkspace(ctx context.Context, id, caller string) (*os.Root, contract.Request, error) {
	s, err := r.loadSession(ctx, id, caller, false)
	if err != nil {
		return nil, contract.Request{}, err
	}
	root, err := os.OpenRoot(sessionfs.WorkspaceDir(s.runDir))
	if err != nil {
		return nil, contract.Request{}, fmt.Errorf("opening session workspace: %w", err)
	}
	s.touch(ctx, time.Now())
	req := s.rec.Request
	if req.UID, req.GID, err = box.HostIDsOf(s.runDir, req.UID, req.GID); err != nil {
		root.Close()
		return nil, contract.Request{}, err
	}
	return root, req, nil
}

// checkSessionPath refuses a path that is not relative to /workspace.
func checkSessionPath(rel string) error {
	if len(rel) > contract.MaxPathBytes {
		return &contract.PathError{Field: contract.FieldFiles, Path: contract.CutPath(rel), Err: contract.ErrNameTooLong}
	}
	if rel == "" || !filepath.IsLocal(rel) || strings.ContainsRune(rel, 0) {
		return contract.FieldErr(contract.FieldFiles, "%q must be a path relative to /workspace", contract.CutPath(rel))
	}
	return nil
}

// ReadSessionFile returns a regular file of session id's workspace, of at
// most limit bytes: ReadSessionPath of /workspace/rel.
func (r *Layer) ReadSessionFile(ctx context.Context, id, caller, rel string, limit int64) ([]byte, error) {
	if err := checkSessionPath(rel); err != nil {
		return nil, err
	}
	return r.ReadSessionPath(ctx, id, caller, path.Join(oci.Workspace, rel), limit)
}

// WriteSessionFile writes a file into session id's workspace, the
// sandbox user's: WriteSessionPath of /workspace/rel.
func (r *Layer) WriteSessionFile(ctx context.Context, id, caller, rel string, data []byte) error {
	if err := checkSessionPath(rel); err != nil {
		return err
	}
	_, err := r.WriteSessionPath(ctx, id, caller, path.Join(oci.Workspace, rel), bytes.NewReader(data))
	return err
}

// CopyToSession copies a host file or directory to dest in session id's
// workspace (a directory's contents go into dest).
func (r *Layer) CopyToSession(ctx context.Context, id, src, dest string) error {
	if dest != "." {
		if err := checkSessionPath(dest); err != nil {
			return err
		}
	}
	abs := path.Join(oci.Workspace, dest)
	root, req, err := r.sessionWorkspace(ctx, id, "")
	if err != nil {
		return err
	}
	defer root.Close()
	st, err := os.Stat(src)
	if err != nil {
		return contract.FieldErr(contract.FieldCopyIn, "%s: %v", src, err)
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return contract.FieldErr(contract.FieldCopyIn, "%s is not a regular file or a directory", src)
		}
		if st.Size() > req.TmpBytes {
			return contract.FieldErr(contract.FieldCopyIn, "%s holds %d bytes, more than the workspace's %d", src, st.Size(), req.TmpBytes)
		}
		if dir := filepath.Dir(dest); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("copying in: %w", box.FSError(abs, err))
			}
		}
		if err := box.CopyFile(root, dest, src, st.Mode().Perm()); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("copying in: %w", box.FSError(abs, err))
		} else if errors.Is(err, os.ErrExist) {
			return contract.FieldErr(contract.FieldCopyIn, "%s exists in the session: remove it first", contract.CutPath(abs))
		}
		return root.Lchown(dest, int(req.UID), int(req.GID))
	}
	if err := box.CheckTree(src, req.TmpBytes); err != nil {
		return err
	}
	if dest != "." {
		if err := root.MkdirAll(dest, 0o755); err != nil {
			return fmt.Errorf("copying in: %w", box.FSError(abs, err))
		}
		_ = root.Lchown(dest, int(req.UID), int(req.GID))
	}
	sub, err := box.OpenDirRoot(root, dest)
	if err != nil {
		return fmt.Errorf("copying in: %w", box.FSError(abs, err))
	}
	defer sub.Close()
	return box.CopyInto(src, sub, req.UID, req.GID)
}

// CopyFromSession copies src (a file or directory of session id's
// workspace) to the host path dst, with copy-out's safety: regular files
// and directories only, at most the workspace's size.
func (r *Layer) CopyFromSession(ctx context.Context, id, src, dst string) ([]contract.File, int, error) {
	if src != "." {
		if err := checkSessionPath(src); err != nil {
			return nil, 0, err
		}
	}
	abs := path.Join(oci.Workspace, src)
	root, req, err := r.sessionWorkspace(ctx, id, "")
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	st, err := root.Lstat(src)
	switch {
	case err != nil:
		return nil, 0, box.FSError(abs, err)
	case st.Mode()&fs.ModeSymlink != 0:
		// Not followed: copy-out takes what is the session's only.
		return nil, 0, fmt.Errorf("%s is a symlink: %w", contract.CutPath(abs), contract.ErrFileNotFound)
	case st.IsDir():
		sub, err := box.OpenDirRoot(root, src)
		if err != nil {
			return nil, 0, fmt.Errorf("copying out: %w", box.FSError(abs, err))
		}
		defer sub.Close()
		return box.CopyOutOf(sub, dst, req.TmpBytes)
	}
	in, err := box.OpenRegular(root, contract.FieldCopyOut, src, abs, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, box.FSError(abs, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("copying out: %w", err)
	}
	n, err := io.Copy(out, io.LimitReader(in, req.TmpBytes))
	if err := errors.Join(err, out.Close()); err != nil {
		return nil, 0, fmt.Errorf("copying out: %w", err)
	}
	return []contract.File{{Path: src, Size: n}}, 0, nil
}
