package imagebuild

// Reading COPY's sources from the build context: every path resolved
// beneath the context's directory by the kernel (openat2 RESOLVE_BENEATH),
// so that neither ".." nor a symlink leads out of it; below a source
// directory, nothing is followed (a symlink is copied as one).

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// entry is one thing a COPY source holds.
type entry struct {
	// src is the source's index; rel the path below it ("" for the
	// source itself).
	src int
	rel string
	// mode is the file's type and permission bits (unix.S_IF*).
	mode uint32
	size int64
	// target is a symlink's.
	target string
	// open opens a regular file for reading.
	open func() (*os.File, error)
}

// ErrOutsideContext says that a COPY source leaves the build context.
var ErrOutsideContext = errors.New("leaves the build context")

// walkSources calls fn for each source and everything under the
// directories among them, parents first. A source that is a symlink is
// followed (beneath the context), as Docker's COPY does, unless keepLinks
// says to copy it as one, as E2B's copy does.
func walkSources(contextDir string, srcs []string, keepLinks bool, fn func(entry) error) error {
	root, err := unix.Open(contextDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the build context: %w", &os.PathError{Op: "open", Path: contextDir, Err: err})
	}
	defer unix.Close(root)
	for i, src := range srcs {
		rel := path.Clean(strings.TrimPrefix(path.Clean("/"+src), "/"))
		if slices.Contains(strings.Split(path.Clean(src), "/"), "..") {
			return fmt.Errorf("COPY source %s: %w", src, ErrOutsideContext)
		}
		if rel == "" {
			rel = "."
		}
		if keepLinks {
			e, link, err := sourceLink(root, rel)
			if err != nil {
				return fmt.Errorf("COPY source %s: %w", src, err)
			}
			if link {
				e.src = i
				if err := fn(e); err != nil {
					return fmt.Errorf("COPY source %s: %w", src, err)
				}
				continue
			}
		}
		fd, err := unix.Openat2(root, rel, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("COPY source %s: %w (through a symlink or ..)", src, ErrOutsideContext)
		}
		if err != nil {
			return fmt.Errorf("COPY source %s: %w", src, err)
		}
		err = walkFD(fd, i, "", fn)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("COPY source %s: %w", src, err)
		}
	}
	return nil
}

// walkFD reports the open file fd as rel of source i and, a directory,
// what it holds. fd stays the caller's.
func walkFD(fd, i int, rel string, fn func(entry) error) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	e := entry{src: i, rel: rel, mode: st.Mode, size: st.Size}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.open = func() (*os.File, error) {
			// The descriptor is the file itself, resolved safely: a new
			// one of its own offset, through this process's own /proc.
			return os.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
		}
		return fn(e)
	case unix.S_IFDIR:
	default:
		return fmt.Errorf("%s: neither a file, a directory nor a symlink", nameOf(rel))
	}
	if err := fn(e); err != nil {
		return err
	}
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	dir := os.NewFile(uintptr(dfd), rel)
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		sub := path.Join(rel, name)
		var cst unix.Stat_t
		if err := unix.Fstatat(fd, name, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if cst.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readlinkat(fd, name)
			if err != nil {
				return err
			}
			if err := fn(entry{src: i, rel: sub, mode: cst.Mode, target: target}); err != nil {
				return err
			}
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", sub, err)
		}
		err = walkFD(cfd, i, sub, fn)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// sourceLink says whether source rel of the context root is a symlink,
// and returns its entry if it is; its directory is resolved beneath root.
func sourceLink(root int, rel string) (entry, bool, error) {
	if rel == "." {
		return entry{}, false, nil
	}
	dir, err := unix.Openat2(root, path.Dir(rel), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.EXDEV) {
		return entry{}, false, fmt.Errorf("%w (through a symlink or ..)", ErrOutsideContext)
	} else if err != nil {
		return entry{}, false, err
	}
	defer unix.Close(dir)
	base := path.Base(rel)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return entry{}, false, nil // opened and reported as anything else is
	}
	target, err := readlinkat(dir, base)
	if err != nil {
		return entry{}, false, err
	}
	return entry{mode: st.Mode, target: target}, true, nil
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func nameOf(rel string) string {
	if rel == "" {
		return "the source"
	}
	return rel
}

// hashSources is the digest of what srcs hold: names, types, modes,
// contents and link targets, which key a COPY's cache entry.
func hashSources(contextDir string, srcs []string, keepLinks bool) (string, error) {
	h := sha256.New()
	err := walkSources(contextDir, srcs, keepLinks, func(e entry) error {
		fmt.Fprintf(h, "%d\x00%s\x00%o\x00%s\x00", e.src, e.rel, e.mode, e.target)
		if e.open == nil {
			return nil
		}
		f, err := e.open()
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(h, f)
		fmt.Fprintf(h, "\x00%d\x00", n)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
