package sessionfs

// A session's files on the host: the tmpfs of what it may write, and paths found inside it.

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/userns"
)

// A run's /tmp is a tmpfs of its sandbox's own, and its workspace a tmpfs
// on the host: under runsc the host cannot reach the first (gVisor's /tmp
// lives in its Sentry), and each is as large as --tmp-size. A session's
// files are reached from the host at any time, so all it may write lives
// on the host: one tmpfs of the session's size (what /workspace, /tmp and
// the home share, so that the limit holds for them together), mounted at
// reaper.FilesDir, whose directories the sandbox binds (package session
// mounts it). Runs keep their layout: nothing reaches into a run's /tmp,
// and one mount fewer is faster to make.
//
// Under runsc the sandbox's writes to a bound directory go through its
// gofer to the host's files, and gVisor revalidates what it caches of
// them (runsc's default --file-access-mounts=shared): the host sees the
// sandbox's writes (inotify too), and the sandbox the host's.

// Root is a directory of the sandbox the host holds for a session.
type Root struct {
	// Sandbox is its path in the sandbox; Dir is where it is in the
	// files tmpfs.
	Sandbox, Dir string
}

// Roots are the directories of a session the host reads and writes.
// /home is bound whole (a mount point every Debian image has, which a
// read-only root could not get at run time), root's, and user, the
// sandbox user's, in it.
var Roots = []Root{
	{oci.Workspace, "workspace"},
	{"/tmp", "tmp"},
	{contract.SessionHome, "home/user"},
}

// WorkspaceDir is the host directory a session binds at /workspace.
func WorkspaceDir(runDir string) string {
	return filepath.Join(reaper.FilesDir(runDir), Roots[0].Dir)
}

// Path is a path in a session's sandbox under one of its roots.
type Path struct {
	// Abs is the path, cleaned; Rel is the part under the root ("." for
	// the root itself).
	Abs, Rel string
	root     int
}

// Parse checks that p is an absolute path under one of a session's roots,
// naming field when it is not. It is cleaned first, as the sandbox's
// kernel would read it: "/tmp/a/../b" is /tmp/b, "/tmp/.." is / and
// refused. What it names is found later, inside its root only.
func Parse(field, p string) (Path, error) {
	if len(p) > contract.MaxPathBytes {
		return Path{}, &contract.PathError{Field: field, Path: contract.CutPath(p), Err: contract.ErrNameTooLong}
	}
	if !path.IsAbs(p) || strings.ContainsRune(p, 0) {
		return Path{}, contract.FieldErr(field, "%q must be an absolute path under /workspace, /tmp or %s", contract.CutPath(p), contract.SessionHome)
	}
	clean := path.Clean(p)
	for i, r := range Roots {
		if clean == r.Sandbox {
			return Path{Abs: clean, Rel: ".", root: i}, nil
		}
		if rest, ok := strings.CutPrefix(clean, r.Sandbox+"/"); ok {
			return Path{Abs: clean, Rel: rest, root: i}, nil
		}
	}
	return Path{}, contract.FieldErr(field, "%q is not under /workspace, /tmp or %s, the directories of a session that can be read and written", contract.CutPath(p), contract.SessionHome)
}

// Files is a session's files tmpfs, opened.
type Files struct {
	files *os.Root
	// uid and gid are the sandbox user's on the host; shift is what the
	// sandbox's user namespace adds to an id (0 without one).
	uid, gid, shift uint32
}

// Open opens the files of the session whose run directory is runDir and
// whose sandbox user is uid:gid (as the sandbox sees them).
func Open(runDir string, uid, gid uint32) (*Files, error) {
	files, err := os.OpenRoot(reaper.FilesDir(runDir))
	if err != nil {
		return nil, fmt.Errorf("opening session files: %w", err)
	}
	hu, hg, err := box.HostIDsOf(runDir, uid, gid)
	if err != nil {
		files.Close()
		return nil, err
	}
	return &Files{files: files, uid: hu, gid: hg, shift: hu - uid}, nil
}

// Close closes the files tmpfs.
func (f *Files) Close() error { return f.files.Close() }

// root opens p's root. Each root is a root of its own: a symlink that
// leads out of it, even into another of the session's, is not followed,
// nor is an absolute one (os.Root resolves every name component by
// component, with openat and no symlink followed by the kernel, so a
// sandbox that swaps a directory for a symlink meanwhile cannot lead it
// out either). It is opened through the files tmpfs's root: the sandbox
// can replace its home (a directory, not a mount point) by a symlink, and
// that one leads nowhere but into the tmpfs.
func (f *Files) root(p Path) (*os.Root, error) {
	root, err := box.OpenDirRoot(f.files, Roots[p.root].Dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", Roots[p.root].Sandbox, err)
	}
	return root, nil
}

// op opens p's root and runs fn; what fn returns as a plain error of the
// file system is told in the caller's terms (sandbox.FSError).
func (f *Files) op(p Path, fn func(root *os.Root) error) error {
	root, err := f.root(p)
	if err != nil {
		return err
	}
	defer root.Close()
	return box.FSError(p.Abs, fn(root))
}

// sandboxID is a host uid or gid as the sandbox sees it.
func (f *Files) sandboxID(id uint32) uint32 {
	if f.shift == 0 {
		return id
	}
	if id >= f.shift && id-f.shift < userns.Size {
		return id - f.shift
	}
	// Not of its namespace (the host's root): its overflow id.
	return 65534
}
