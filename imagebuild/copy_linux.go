package imagebuild

// COPY, ADD and WORKDIR: the host writes into the step's snapshot,
// mounted on the host, every path resolved inside the image's root by
// the kernel (openat2 RESOLVE_IN_ROOT): a symlink the image plants
// resolves within the image, never to the host's files; the last
// component of what is written is never followed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"golang.org/x/sys/unix"
)

// copy runs COPY or ADD of local files.
func (b *builder) copy(ctx context.Context, s Step, c instructions.SourcesAndDest, chown string) (bool, error) {
	uid, gid := uint32(0), uint32(0)
	if chown != "" {
		var err error
		if uid, gid, err = parseChown(chown); err != nil {
			return false, err
		}
	}
	srcs, wild, err := expandSources(b.o.Context, c.SourcePaths)
	if err != nil {
		return false, err
	}
	sum, err := hashSources(b.o.Context, srcs, s.KeepLinks)
	if err != nil {
		return false, err
	}
	dest := b.st.workdir(c.DestPath)
	intoDir := strings.HasSuffix(c.DestPath, "/") || len(srcs) > 1 || wild
	b.key = stepKey(b.key, fmt.Sprintf("COPY %q %s %t %d:%d %t", srcs, dest, intoDir, uid, gid, s.KeepLinks), sum)
	return b.layerStep(ctx, s.Text, func(ctx context.Context, active, _ string) error {
		return b.onHost(ctx, active, func(root string) error {
			w, err := openRoot(root, uid, gid, b.o.DiskBytes)
			if err != nil {
				return err
			}
			defer w.close()
			return w.copySources(b.o.Context, srcs, dest, intoDir, s.KeepLinks)
		})
	})
}

// workdir runs WORKDIR: the directory is made, the sandbox's root being
// read-only at run time.
func (b *builder) workdir(ctx context.Context, s Step, c *instructions.WorkdirCommand) (bool, error) {
	b.st.config.WorkingDir = b.st.workdir(c.Path)
	uid, gid, err := parseChown(b.st.stepUser)
	if err != nil {
		return false, err
	}
	b.key = stepKey(b.key, "WORKDIR "+b.st.config.WorkingDir, b.st.stepUser)
	return b.layerStep(ctx, s.Text, func(ctx context.Context, active, _ string) error {
		return b.onHost(ctx, active, func(root string) error {
			w, err := openRoot(root, uid, gid, 0)
			if err != nil {
				return err
			}
			defer w.close()
			fd, err := w.mkdirAll(b.st.config.WorkingDir)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
	})
}

// rootWriter writes into an image's root as uid:gid.
type rootWriter struct {
	root     int
	uid, gid int
	// left is how many bytes may still be written (limit > 0).
	left, limit int64
}

func openRoot(root string, uid, gid uint32, limit int64) (*rootWriter, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the image's root: %w", err)
	}
	return &rootWriter{root: fd, uid: int(uid), gid: int(gid), left: limit, limit: limit}, nil
}

func (w *rootWriter) close() { unix.Close(w.root) }

// inRoot opens p (absolute in the image) resolved inside the root.
func (w *rootWriter) inRoot(p string, flags uint64) (int, error) {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(w.root, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
}

// mkdirAll makes directory p and its missing parents (0755, uid:gid)
// and returns it open (O_PATH).
func (w *rootWriter) mkdirAll(p string) (int, error) {
	p = path.Clean("/" + p)
	fd, err := w.inRoot(p, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil || !errors.Is(err, unix.ENOENT) || p == "/" {
		if err != nil {
			err = fmt.Errorf("%s: %w", p, err)
		}
		return fd, err
	}
	parent, err := w.mkdirAll(path.Dir(p))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	base := path.Base(p)
	if err := unix.Mkdirat(parent, base, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("creating %s: %w", p, err)
	}
	if err := unix.Fchownat(parent, base, w.uid, w.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, fmt.Errorf("chown %s: %w", p, err)
	}
	return w.inRoot(p, unix.O_PATH|unix.O_DIRECTORY)
}

// isDir says whether p is a directory in the image.
func (w *rootWriter) isDir(p string) bool {
	fd, err := w.inRoot(p, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// copySources copies srcs from the context to dest, as Docker does: a
// directory's contents into dest; a file to dest, or into it when it is a
// directory (intoDir, or one in the image).
func (w *rootWriter) copySources(contextDir string, srcs []string, dest string, intoDir, keepLinks bool) error {
	if !intoDir && w.isDir(dest) {
		intoDir = true
	}
	return walkSources(contextDir, srcs, keepLinks, func(e entry) error {
		target := dest
		switch {
		case e.rel != "":
			target = path.Join(dest, e.rel)
		case e.mode&unix.S_IFMT != unix.S_IFDIR && intoDir:
			target = path.Join(dest, path.Base(path.Clean("/"+srcs[e.src])))
		}
		return w.put(target, e)
	})
}

// put writes one entry at p.
func (w *rootWriter) put(p string, e entry) error {
	perm := e.mode & 0o7777
	if e.mode&unix.S_IFMT == unix.S_IFDIR {
		fd, err := w.mkdirAll(p)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		// Through /proc: an O_PATH descriptor takes no fchmod.
		return unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), perm, 0)
	}
	parent, err := w.mkdirAll(path.Dir(p))
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	base := path.Base(p)
	var st unix.Stat_t
	if err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return fmt.Errorf("%s is a directory in the image", p)
		}
		// A symlink (or anything) there is replaced, never followed.
		if err := unix.Unlinkat(parent, base, 0); err != nil {
			return fmt.Errorf("replacing %s: %w", p, err)
		}
	}
	if e.mode&unix.S_IFMT == unix.S_IFLNK {
		if err := unix.Symlinkat(e.target, parent, base); err != nil {
			return fmt.Errorf("creating %s: %w", p, err)
		}
		return unix.Fchownat(parent, base, w.uid, w.gid, unix.AT_SYMLINK_NOFOLLOW)
	}
	if w.limit > 0 {
		if w.left -= e.size; w.left < 0 {
			return fmt.Errorf("the files copied exceed the step's disk limit of %d bytes", w.limit)
		}
	}
	src, err := e.open()
	if err != nil {
		return err
	}
	defer src.Close()
	fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	f := fdFile(fd, p)
	defer f.Close()
	if err := unix.Fchown(fd, w.uid, w.gid); err != nil {
		return fmt.Errorf("chown %s: %w", p, err)
	}
	if _, err := io.Copy(f, io.LimitReader(src, e.size)); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	// After the chown, which clears setuid bits: StripPrivileges clears
	// them again in the layer.
	return unix.Fchmod(fd, perm)
}

func fdFile(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }
