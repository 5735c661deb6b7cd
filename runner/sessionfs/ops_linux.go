package sessionfs

// A session's files anywhere it may write: read, write, stat, list, mkdir, move, remove.

// Every name is found inside one of its roots (Files.root); ids and paths
// are answered as the sandbox sees them.

import (
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

// Read returns the regular file at p, of at most limit bytes. A symlink on
// the way is followed inside its root only.
func (f *Files) Read(p Path, limit int64) ([]byte, error) {
	var data []byte
	err := f.op(p, func(root *os.Root) error {
		fl, err := box.OpenRegular(root, contract.FieldPath, p.Rel, p.Abs, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer fl.Close()
		if data, err = io.ReadAll(io.LimitReader(fl, limit+1)); err != nil {
			return fmt.Errorf("reading %s: %w", p.Abs, err)
		}
		if int64(len(data)) > limit {
			return contract.FieldErr(contract.FieldPath, "%s is larger than %d bytes, the most that can be read at once", contract.CutPath(p.Abs), limit)
		}
		return nil
	})
	return data, err
}

// Write writes what data holds to the file at p, making it and the
// directories it lacks, the sandbox user's. A file that is there is
// truncated and keeps its owner and mode.
func (f *Files) Write(p Path, data io.Reader) (contract.FileEntry, error) {
	var e contract.FileEntry
	err := f.op(p, func(root *os.Root) error {
		if p.Rel == "." {
			return contract.FieldErr(contract.FieldPath, "%s is a directory", p.Abs)
		}
		if _, err := f.mkdirs(root, path.Dir(p.Rel)); err != nil {
			return err
		}
		created := true
		// O_EXCL opens nothing that is there; what is there is opened
		// without waiting on it, and written only if a regular file.
		fl, err := root.OpenFile(p.Rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NONBLOCK, 0o644)
		if errors.Is(err, fs.ErrExist) {
			created = false
			fl, err = box.OpenRegular(root, contract.FieldPath, p.Rel, p.Abs, os.O_WRONLY, 0)
		}
		if err != nil {
			return err
		}
		if created {
			err = fl.Chown(int(f.uid), int(f.gid))
		} else if err = fl.Truncate(0); err == nil {
			// New content: the old one's metadata goes.
			err = clearMeta(int(fl.Fd()))
		}
		if err == nil {
			_, err = io.Copy(fl, data)
		}
		if err := errors.Join(err, fl.Close()); err != nil {
			if created {
				// No half-written file of boxer's.
				_ = root.Remove(p.Rel)
			}
			return err
		}
		e, err = f.entry(root, p)
		return err
	})
	return e, err
}

// mkdirs makes rel and its parents that are not there, the sandbox
// user's, and says whether it made rel.
func (f *Files) mkdirs(root *os.Root, rel string) (bool, error) {
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
			if err := root.Lchown(d, int(f.uid), int(f.gid)); err != nil {
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

// Stat describes what p names; a symlink is described, not followed.
func (f *Files) Stat(p Path) (contract.FileEntry, error) {
	var e contract.FileEntry
	err := f.op(p, func(root *os.Root) (err error) {
		e, err = f.entry(root, p)
		return err
	})
	return e, err
}

// entry describes p, which root holds.
func (f *Files) entry(root *os.Root, p Path) (contract.FileEntry, error) {
	st, err := root.Lstat(p.Rel)
	if err != nil {
		return contract.FileEntry{}, err
	}
	e := contract.FileEntry{
		Name: path.Base(p.Abs), Path: p.Abs, Type: typeOf(st.Mode()), Size: st.Size(),
		Mode: unixMode(st.Mode()), Permissions: st.Mode().String(), ModifiedAt: st.ModTime().UTC(),
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		e.UID, e.GID = f.sandboxID(sys.Uid), f.sandboxID(sys.Gid)
	}
	switch e.Type {
	case contract.FileTypeSymlink:
		e.SymlinkTarget, _ = root.Readlink(p.Rel)
	case contract.FileTypeFile:
		e.Metadata = readMeta(root, p)
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

// List lists the directory p, and the directories in it down to depth
// levels (1: its own entries only), sorted by path. Symlinks are listed,
// not followed (p itself may be one to a directory inside its root).
func (f *Files) List(p Path, depth int) ([]contract.FileEntry, error) {
	out := []contract.FileEntry{}
	err := f.op(p, func(root *os.Root) error {
		return f.list(root, p, depth, &out)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (f *Files) list(root *os.Root, p Path, depth int, out *[]contract.FileEntry) error {
	d, err := root.OpenFile(p.Rel, os.O_RDONLY|unix.O_DIRECTORY, 0)
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
			return contract.FieldErr("depth", "%s holds more than %d entries: list a directory further down, or fewer levels", p.Abs, maxListEntries)
		}
		child := Path{Abs: path.Join(p.Abs, name), Rel: path.Join(p.Rel, name), root: p.root}
		e, err := f.entry(root, child)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		} else if err != nil {
			return err
		}
		*out = append(*out, e)
		if e.Type == contract.FileTypeDir && depth > 1 {
			if err := f.list(root, child, depth-1, out); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Mkdir makes the directory p with the parents it lacks, the sandbox
// user's, and says whether it made it (false: it was there).
func (f *Files) Mkdir(p Path) (contract.FileEntry, bool, error) {
	var e contract.FileEntry
	var made bool
	err := f.op(p, func(root *os.Root) (err error) {
		if made, err = f.mkdirs(root, p.Rel); err != nil {
			return err
		}
		if e, err = f.entry(root, p); err == nil && e.Type != contract.FileTypeDir {
			return fmt.Errorf("%s, and is not a directory: %w", p.Abs, contract.ErrFileExists)
		}
		return err
	})
	return e, made, err
}

// Move renames src to dst, from any of the session's roots to any other
// (they are one file system). dst is replaced if the kernel's rename
// would replace it (a file, a symlink, which is never followed, an empty
// directory).
func (f *Files) Move(src, dst Path) (contract.FileEntry, error) {
	var e contract.FileEntry
	err := f.op(src, func(root *os.Root) error {
		if src.Rel == "." || dst.Rel == "." {
			return contract.FieldErr("from", "%s and %s: a session's roots (/workspace, /tmp, %s) cannot be moved or replaced", src.Abs, dst.Abs, contract.SessionHome)
		}
		dstRoot, err := f.root(dst)
		if err != nil {
			return err
		}
		defer dstRoot.Close()
		// The parents are found inside their roots; renameat moves the
		// last names themselves, never what a symlink points to.
		srcDir, err := root.OpenFile(path.Dir(src.Rel), os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer srcDir.Close()
		dstDir, err := dstRoot.OpenFile(path.Dir(dst.Rel), os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return box.FSError(dst.Abs, err)
		}
		defer dstDir.Close()
		if err := unix.Renameat(int(srcDir.Fd()), path.Base(src.Rel), int(dstDir.Fd()), path.Base(dst.Rel)); err != nil {
			switch {
			case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
				return fmt.Errorf("%s: %w", dst.Abs, contract.ErrFileExists)
			case errors.Is(err, unix.EISDIR):
				return contract.FieldErr("to", "%s is a directory, and %s is not: name the path it takes in it", dst.Abs, src.Abs)
			case errors.Is(err, unix.ENOTDIR):
				return contract.FieldErr("to", "%s is a directory, and %s is not", src.Abs, dst.Abs)
			case errors.Is(err, unix.EINVAL):
				return contract.FieldErr("to", "%s is in %s: a directory cannot move into itself", dst.Abs, src.Abs)
			}
			return err
		}
		e, err = f.entry(dstRoot, dst)
		return box.FSError(dst.Abs, err)
	})
	return e, err
}

// Remove removes what p names, a directory with all it holds; a symlink
// is removed, not followed.
func (f *Files) Remove(p Path) error {
	return f.op(p, func(root *os.Root) error {
		if p.Rel == "." {
			return contract.FieldErr(contract.FieldPath, "%s is a root of the session: remove what it holds instead", p.Abs)
		}
		if _, err := root.Lstat(p.Rel); err != nil {
			return err
		}
		return root.RemoveAll(p.Rel)
	})
}
