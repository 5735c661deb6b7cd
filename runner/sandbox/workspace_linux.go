package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/runner/contract"
	"golang.org/x/sys/unix"
)

// maxCopyOutEntries bounds how many files and directories --copy-out takes
// (a program can make far more tiny files than anyone wants back).
const maxCopyOutEntries = 200000

// MountWorkspace mounts the size-limited tmpfs that becomes /workspace on
// the host, so that files can go in before the run and come out after it
// (the sandbox's own mounts die with its mount namespace).
func MountWorkspace(dir string, size int64, uid, gid uint32) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating workspace: %w", err)
	}
	opts := "size=" + strconv.FormatInt(size, 10) + ",mode=0755,uid=" + strconv.FormatUint(uint64(uid), 10) + ",gid=" + strconv.FormatUint(uint64(gid), 10)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting workspace: %w", err)
	}
	return nil
}

// CopyIn copies the host directory src into the workspace dst, owned by
// uid:gid. It refuses special files and symlinks that point outside src,
// and a tree larger than budget, before copying anything.
func CopyIn(src, dst string, budget int64, uid, gid uint32) error {
	if err := CheckTree(src, budget); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	return CopyInto(src, root, uid, gid)
}

// CheckTree checks the host directory src for copyIn: no special files, no
// symlinks that point outside it, at most budget bytes.
func CheckTree(src string, budget int64) error {
	st, err := os.Stat(src)
	if err != nil {
		return contract.FieldErr(contract.FieldCopyIn, "%s: %v", src, err)
	}
	if !st.IsDir() {
		return contract.FieldErr(contract.FieldCopyIn, "%s is not a directory", src)
	}
	var total int64
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch t := d.Type(); {
		case t.IsDir():
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) || !filepath.IsLocal(filepath.Join(filepath.Dir(rel), target)) {
				return contract.FieldErr(contract.FieldCopyIn, "%s: refusing symlink %s -> %s: it points outside the directory", src, rel, target)
			}
		default:
			return contract.FieldErr(contract.FieldCopyIn, "%s: refusing special file %s (%s)", src, rel, t.Type())
		}
		return nil
	})
	var fe *contract.FieldError
	if errors.As(err, &fe) {
		return err
	} else if err != nil {
		return contract.FieldErr(contract.FieldCopyIn, "%s: %v", src, err)
	}
	if total > budget {
		return contract.FieldErr(contract.FieldCopyIn, "%s holds %d bytes, more than the workspace's %d: raise {tmp_size}", src, total, budget)
	}
	return nil
}

// CopyInto copies the checked host directory src into root.
func CopyInto(src string, root *os.Root, uid, gid uint32) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Permission bits only: no setuid, setgid or sticky from the host.
		mode := info.Mode().Perm()
		switch {
		case d.IsDir():
			if err := root.Mkdir(rel, mode|0o700); err != nil {
				return fmt.Errorf("copying in %s: %w", rel, err)
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			if err := root.Symlink(target, rel); err != nil {
				return fmt.Errorf("copying in %s: %w", rel, err)
			}
		default:
			if err := CopyFile(root, rel, p, mode); err != nil {
				return fmt.Errorf("copying in %s: %w", rel, err)
			}
		}
		return root.Lchown(rel, int(uid), int(gid))
	})
}

// WriteFiles writes files (relative path to content) into the workspace dst,
// creating their directories, owned by uid:gid.
func WriteFiles(dst string, files map[string][]byte, uid, gid uint32) error {
	if len(files) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeFilesRoot(root, files, uid, gid)
}

// writeFilesRoot is writeFiles into root. A session's workspace holds
// what its sandbox made: a name is written only if it is a regular file
// or nothing, and opened without waiting on what is there (openRegular).
func writeFilesRoot(root *os.Root, files map[string][]byte, uid, gid uint32) error {
	for name, data := range files {
		abs := path.Join(oci.Workspace, name)
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("writing files: %w", FSError(abs, err))
			}
			for d := dir; d != "."; d = filepath.Dir(d) {
				_ = root.Lchown(d, int(uid), int(gid))
			}
		}
		f, err := OpenRegular(root, contract.FieldFiles, name, abs, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("writing files: %w", FSError(abs, err))
		}
		err = f.Truncate(0)
		if err == nil {
			_, err = f.Write(data)
		}
		if err == nil {
			err = f.Chown(int(uid), int(gid))
		}
		if err := errors.Join(err, f.Close()); err != nil {
			return fmt.Errorf("writing files: %w", FSError(abs, err))
		}
	}
	return nil
}

// CopyFile copies the host file src to rel under root, with mode.
func CopyFile(root *os.Root, rel, src string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// CopyOut copies the workspace src to the host directory dst after the run:
// regular files and directories only (symlinks are not followed, special
// files are skipped), at most budget bytes in all, and never outside dst
// (every write goes through an os.Root). It returns what it copied and how
// many entries it skipped.
func CopyOut(src, dst string, budget int64) ([]contract.File, int, error) {
	from, err := os.OpenRoot(src)
	if err != nil {
		return nil, 0, fmt.Errorf("copying out: %w", err)
	}
	defer from.Close()
	return CopyOutOf(from, dst, budget)
}

// CopyOutOf is copyOut from a root: every read stays inside it, even while
// the sandbox still runs and changes the tree (a session's).
func CopyOutOf(from *os.Root, dst string, budget int64) ([]contract.File, int, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, 0, fmt.Errorf("copying out to %s: %w", dst, err)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return nil, 0, fmt.Errorf("copying out to %s: %w", dst, err)
	}
	defer root.Close()
	var files []contract.File
	skipped, entries := 0, 0
	err = fs.WalkDir(from.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			skipped++
			return nil
		}
		if rel == "." {
			return nil
		}
		if entries++; entries > maxCopyOutEntries {
			skipped++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			if err := root.Mkdir(rel, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				skipped++
				return fs.SkipDir
			}
		case t.IsRegular():
			info, err := d.Info()
			if err != nil || info.Size() > budget {
				// Too big for what is left (a sparse file can claim any size).
				skipped++
				return nil
			}
			n, err := copyOutFile(root, rel, from, info)
			if err != nil {
				if _, full := fault.NoSpace(err); full {
					// No half-written file: what is there is whole.
					_ = root.Remove(rel)
					return &fault.Error{
						What: fmt.Sprintf("no space left on device copying /workspace out to %s (%d files copied, %s did not fit)", dst, len(files), rel),
						Do:   "free space there, or copy out to a directory on another filesystem, and run again",
						Err:  err,
					}
				}
				skipped++
				return nil
			}
			budget -= n
			files = append(files, contract.File{Path: rel, Size: n})
		default:
			// Symlinks, FIFOs, sockets, devices.
			skipped++
		}
		return nil
	})
	return files, skipped, err
}

func copyOutFile(root *os.Root, rel string, from *os.Root, info fs.FileInfo) (int64, error) {
	// O_NOFOLLOW: the entry was a regular file when listed; never follow a
	// link that might have taken its place.
	in, err := from.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", rel)
	}
	mode := fs.FileMode(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.CopyN(out, in, info.Size())
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, errors.Join(err, out.Close())
}

// ReturnFiles reads the workspace files whose path matches one of globs,
// for the result: regular files only (symlinks are not followed, special
// files skipped), each read through O_NOFOLLOW and checked again once
// open, at most budget bytes of content in all. A file larger than what is
// left is listed, truncated, without content.
func ReturnFiles(src string, globs []string, budget int64) []contract.ReturnedFile {
	from, err := os.OpenRoot(src)
	if err != nil {
		return nil
	}
	defer from.Close()
	var out []contract.ReturnedFile
	entries := 0
	_ = fs.WalkDir(from.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if entries++; entries > maxCopyOutEntries || len(out) >= contract.MaxReturnFiles {
			return fs.SkipAll
		}
		if rel == "." || !d.Type().IsRegular() || !contract.MatchesAny(globs, rel) {
			return nil
		}
		f, ok := returnFile(from, rel, budget)
		if ok {
			budget -= int64(len(f.Content))
			out = append(out, f)
		}
		return nil
	})
	return out
}

// returnFile reads one file of at most budget bytes; a larger one comes
// back truncated, without content. ok is false when the file is not a
// regular file once open (it was swapped for something else).
func returnFile(from *os.Root, rel string, budget int64) (contract.ReturnedFile, bool) {
	in, err := from.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return contract.ReturnedFile{}, false
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return contract.ReturnedFile{}, false
	}
	f := contract.ReturnedFile{Path: rel, Size: st.Size()}
	if st.Size() > budget {
		head := make([]byte, 512)
		n, _ := io.ReadFull(in, head)
		f.MediaType, f.Truncated = contract.MediaType(rel, head[:n]), true
		return f, true
	}
	// The size is checked while reading too: the file may grow.
	data, err := io.ReadAll(io.LimitReader(in, budget+1))
	if err != nil {
		return contract.ReturnedFile{}, false
	}
	f.MediaType = contract.MediaType(rel, data)
	if int64(len(data)) > budget {
		f.Size, f.Truncated = int64(len(data)), true
		return f, true
	}
	f.Size, f.Content = int64(len(data)), data
	if f.Content == nil {
		f.Content = []byte{}
	}
	return f, true
}

// WriteCode writes the program into dir, which is bind-mounted read-only
// into the sandbox, and makes dir read-only.
func WriteCode(dir, file string, code []byte, support map[string]string) error {
	for name, content := range support {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	// 0644, root's: even a sandbox running as uid 0 (without capabilities)
	// meets the read-only mount, not just a permission bit.
	if err := os.WriteFile(filepath.Join(dir, file), code, 0o644); err != nil {
		return fmt.Errorf("writing code: %w", err)
	}
	return os.Chmod(dir, 0o555)
}

// FSError tells an error of the file system about abs in the caller's
// terms: not there, leading out of its root (a PathError that is also
// not there: the same to the caller), exists, full, too long, or a
// refusal naming the path (cut if long).
func FSError(abs string, err error) error {
	var fe *contract.FieldError
	var pe *contract.PathError
	shown := contract.CutPath(abs)
	switch {
	case err == nil, errors.As(err, &fe), errors.As(err, &pe), errors.Is(err, contract.ErrSessionNotFound), errors.Is(err, contract.ErrFileExists), errors.Is(err, contract.ErrFileNotFound), errors.Is(err, contract.ErrSessionFull):
		return err
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return contract.ErrSessionFull
	case isEscape(err):
		return &contract.PathError{Field: contract.FieldPath, Path: shown, Err: contract.ErrLeadsOut}
	case errors.Is(err, unix.ENAMETOOLONG):
		return &contract.PathError{Field: contract.FieldPath, Path: shown, Err: contract.ErrNameTooLong}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s: %w", shown, contract.ErrFileNotFound)
	case errors.Is(err, fs.ErrExist), errors.Is(err, unix.ENOTEMPTY):
		return fmt.Errorf("%s: %w", shown, contract.ErrFileExists)
	case errors.Is(err, unix.ENOTDIR):
		return contract.FieldErr(contract.FieldPath, "%s: a part of it is not a directory", shown)
	case errors.Is(err, unix.EISDIR):
		return contract.FieldErr(contract.FieldPath, "%s is a directory", shown)
	case errors.Is(err, unix.EINVAL):
		return contract.FieldErr(contract.FieldPath, "%s: %v", shown, err)
	case errors.Is(err, fs.ErrPermission):
		return contract.FieldErr(contract.FieldPath, "%s: permission denied (the sandbox changed its mode)", shown)
	case errors.Is(err, unix.EWOULDBLOCK):
		return contract.FieldErr(contract.FieldPath, "%s is held by a lease of a process in the sandbox: try again once it lets go", shown)
	}
	return err
}

// isEscape says whether err is os.Root's refusal of a name that leads out
// of it (a symlink out, an absolute one).
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}
