package session

// A session's files anywhere it may write: read, write, stat, list, mkdir, move, remove.

// Every name is found inside one of its roots (sessionFiles.root); ids
// and paths are answered as the sandbox sees them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"golang.org/x/sys/unix"
)

// maxListEntries bounds what one listing returns.
const maxListEntries = 10000

// sessionOp opens session id of caller and the root of path p in it, and
// runs op; what op returns as a plain error of the file system is told in
// the caller's terms (fsError).
func (r *Layer) sessionOp(ctx context.Context, id, caller, p string, op func(*sessionFiles, *os.Root, sandboxPath) error) error {
	sp, err := parseSandboxPath(contract.FieldPath, p)
	if err != nil {
		return err
	}
	sf, err := r.openSessionFiles(ctx, id, caller)
	if err != nil {
		return err
	}
	defer sf.Close()
	root, err := sf.root(sp)
	if err != nil {
		return err
	}
	defer root.Close()
	return box.FSError(sp.abs, op(sf, root, sp))
}

// ReadSessionPath returns the regular file at p (an absolute path in
// session id of caller), of at most limit bytes. A symlink on the way is
// followed inside its root only.
func (r *Layer) ReadSessionPath(ctx context.Context, id, caller, p string, limit int64) ([]byte, error) {
	var data []byte
	err := r.sessionOp(ctx, id, caller, p, func(_ *sessionFiles, root *os.Root, sp sandboxPath) error {
		f, err := box.OpenRegular(root, contract.FieldPath, sp.rel, sp.abs, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		if data, err = io.ReadAll(io.LimitReader(f, limit+1)); err != nil {
			return fmt.Errorf("reading %s: %w", sp.abs, err)
		}
		if int64(len(data)) > limit {
			return contract.FieldErr(contract.FieldPath, "%s is larger than %d bytes, the most that can be read at once", contract.CutPath(sp.abs), limit)
		}
		return nil
	})
	return data, err
}

// WriteSessionPath writes what data holds to the file at p in session id
// of caller, making it and the directories it lacks, the sandbox user's.
// A file that is there is truncated and keeps its owner and mode.
func (r *Layer) WriteSessionPath(ctx context.Context, id, caller, p string, data io.Reader) (contract.FileEntry, error) {
	var e contract.FileEntry
	err := r.sessionOp(ctx, id, caller, p, func(sf *sessionFiles, root *os.Root, sp sandboxPath) error {
		if sp.rel == "." {
			return contract.FieldErr(contract.FieldPath, "%s is a directory", sp.abs)
		}
		if _, err := sf.mkdirs(root, path.Dir(sp.rel)); err != nil {
			return err
		}
		created := true
		// O_EXCL opens nothing that is there; what is there is opened
		// without waiting on it, and written only if a regular file.
		f, err := root.OpenFile(sp.rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NONBLOCK, 0o644)
		if errors.Is(err, fs.ErrExist) {
			created = false
			f, err = box.OpenRegular(root, contract.FieldPath, sp.rel, sp.abs, os.O_WRONLY, 0)
		}
		if err != nil {
			return err
		}
		if created {
			err = f.Chown(int(sf.uid), int(sf.gid))
		} else {
			err = f.Truncate(0)
		}
		if err == nil {
			_, err = io.Copy(f, data)
		}
		if err := errors.Join(err, f.Close()); err != nil {
			if created {
				// No half-written file of boxer's.
				_ = root.Remove(sp.rel)
			}
			return err
		}
		e, err = sf.entry(root, sp)
		return err
	})
	return e, err
}

// mkdirs makes rel and its parents that are not there, the sandbox
// user's, and says whether it made rel.
func (sf *sessionFiles) mkdirs(root *os.Root, rel string) (bool, error) {
	if rel == "." {
		return false, nil
	}
	made := false
	parts := strings.Split(rel, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		err := root.Mkdir(d, 0o755)
		switch {
		case err == nil:
			// Lchown: what the sandbox put there meanwhile is not
			// followed.
			if err := root.Lchown(d, int(sf.uid), int(sf.gid)); err != nil {
				return false, err
			}
			made = i == len(parts)-1
		case errors.Is(err, fs.ErrExist):
			// A directory, or something the next step finds is not one.
		default:
			return false, err
		}
	}
	return made, nil
}

// StatSessionPath describes what p names in session id of caller; a
// symlink is described, not followed.
func (r *Layer) StatSessionPath(ctx context.Context, id, caller, p string) (contract.FileEntry, error) {
	var e contract.FileEntry
	err := r.sessionOp(ctx, id, caller, p, func(sf *sessionFiles, root *os.Root, sp sandboxPath) (err error) {
		e, err = sf.entry(root, sp)
		return err
	})
	return e, err
}

// entry describes sp, which root holds.
func (sf *sessionFiles) entry(root *os.Root, sp sandboxPath) (contract.FileEntry, error) {
	st, err := root.Lstat(sp.rel)
	if err != nil {
		return contract.FileEntry{}, err
	}
	e := contract.FileEntry{
		Name: path.Base(sp.abs), Path: sp.abs, Type: typeOf(st.Mode()), Size: st.Size(),
		Mode: unixMode(st.Mode()), Permissions: st.Mode().String(), ModifiedAt: st.ModTime().UTC(),
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		e.UID, e.GID = sf.sandboxID(sys.Uid), sf.sandboxID(sys.Gid)
	}
	if e.Type == contract.FileTypeSymlink {
		e.SymlinkTarget, _ = root.Readlink(sp.rel)
	}
	return e, nil
}

// typeOf is a FileEntry's type for mode.
func typeOf(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return contract.FileTypeFile
	case mode.IsDir():
		return contract.FileTypeDir
	case mode&fs.ModeSymlink != 0:
		return contract.FileTypeSymlink
	}
	return contract.FileTypeOther
}

// unixMode is mode's permission bits with setuid, setgid and sticky, as
// the kernel writes them.
func unixMode(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())
	for bit, v := range map[fs.FileMode]uint32{fs.ModeSetuid: unix.S_ISUID, fs.ModeSetgid: unix.S_ISGID, fs.ModeSticky: unix.S_ISVTX} {
		if mode&bit != 0 {
			m |= v
		}
	}
	return m
}

// ListSessionDir lists the directory p of session id of caller, and the
// directories in it down to depth levels (1: its own entries only),
// sorted by path. Symlinks are listed, not followed (p itself may be one
// to a directory inside its root).
func (r *Layer) ListSessionDir(ctx context.Context, id, caller, p string, depth int) ([]contract.FileEntry, error) {
	if depth < 1 {
		return nil, contract.FieldErr("depth", "must be at least 1, not %d", depth)
	}
	out := []contract.FileEntry{}
	err := r.sessionOp(ctx, id, caller, p, func(sf *sessionFiles, root *os.Root, sp sandboxPath) error {
		return sf.list(root, sp, depth, &out)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (sf *sessionFiles) list(root *os.Root, sp sandboxPath, depth int, out *[]contract.FileEntry) error {
	d, err := root.OpenFile(sp.rel, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if len(*out) >= maxListEntries {
			return contract.FieldErr("depth", "%s holds more than %d entries: list a directory further down, or fewer levels", sp.abs, maxListEntries)
		}
		child := sandboxPath{abs: path.Join(sp.abs, name), rel: path.Join(sp.rel, name), root: sp.root}
		e, err := sf.entry(root, child)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		} else if err != nil {
			return err
		}
		*out = append(*out, e)
		if e.Type == contract.FileTypeDir && depth > 1 {
			if err := sf.list(root, child, depth-1, out); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// MakeSessionDir makes the directory p in session id of caller with the
// parents it lacks, the sandbox user's, and says whether it made it (false:
// it was there).
func (r *Layer) MakeSessionDir(ctx context.Context, id, caller, p string) (contract.FileEntry, bool, error) {
	var e contract.FileEntry
	var made bool
	err := r.sessionOp(ctx, id, caller, p, func(sf *sessionFiles, root *os.Root, sp sandboxPath) (err error) {
		if made, err = sf.mkdirs(root, sp.rel); err != nil {
			return err
		}
		if e, err = sf.entry(root, sp); err == nil && e.Type != contract.FileTypeDir {
			return fmt.Errorf("%s, and is not a directory: %w", sp.abs, contract.ErrFileExists)
		}
		return err
	})
	return e, made, err
}

// MoveSessionPath renames from to to in session id of caller, from any of
// its roots to any other (they are one file system). to is replaced if
// the kernel's rename would replace it (a file, a symlink, which is never
// followed, an empty directory).
func (r *Layer) MoveSessionPath(ctx context.Context, id, caller, from, to string) (contract.FileEntry, error) {
	dst, err := parseSandboxPath("to", to)
	if err != nil {
		return contract.FileEntry{}, err
	}
	var e contract.FileEntry
	err = r.sessionOp(ctx, id, caller, from, func(sf *sessionFiles, root *os.Root, src sandboxPath) error {
		if src.rel == "." || dst.rel == "." {
			return contract.FieldErr("from", "%s and %s: a session's roots (/workspace, /tmp, %s) cannot be moved or replaced", src.abs, dst.abs, contract.SessionHome)
		}
		dstRoot, err := sf.root(dst)
		if err != nil {
			return err
		}
		defer dstRoot.Close()
		// The parents are found inside their roots; renameat moves the
		// last names themselves, never what a symlink points to.
		srcDir, err := root.OpenFile(path.Dir(src.rel), os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer srcDir.Close()
		dstDir, err := dstRoot.OpenFile(path.Dir(dst.rel), os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return box.FSError(dst.abs, err)
		}
		defer dstDir.Close()
		if err := unix.Renameat(int(srcDir.Fd()), path.Base(src.rel), int(dstDir.Fd()), path.Base(dst.rel)); err != nil {
			switch {
			case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
				return fmt.Errorf("%s: %w", dst.abs, contract.ErrFileExists)
			case errors.Is(err, unix.EISDIR):
				return contract.FieldErr("to", "%s is a directory, and %s is not: name the path it takes in it", dst.abs, src.abs)
			case errors.Is(err, unix.ENOTDIR):
				return contract.FieldErr("to", "%s is a directory, and %s is not", src.abs, dst.abs)
			case errors.Is(err, unix.EINVAL):
				return contract.FieldErr("to", "%s is in %s: a directory cannot move into itself", dst.abs, src.abs)
			}
			return err
		}
		e, err = sf.entry(dstRoot, dst)
		return box.FSError(dst.abs, err)
	})
	return e, err
}

// RemoveSessionPath removes what p names in session id of caller, a
// directory with all it holds; a symlink is removed, not followed.
func (r *Layer) RemoveSessionPath(ctx context.Context, id, caller, p string) error {
	return r.sessionOp(ctx, id, caller, p, func(_ *sessionFiles, root *os.Root, sp sandboxPath) error {
		if sp.rel == "." {
			return contract.FieldErr(contract.FieldPath, "%s is a root of the session: remove what it holds instead", sp.abs)
		}
		if _, err := root.Lstat(sp.rel); err != nil {
			return err
		}
		return root.RemoveAll(sp.rel)
	})
}
