package session

// A session's files on the host: the tmpfs of what it may write, and paths found inside it.

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/userns"
	"golang.org/x/sys/unix"
)

// A run's /tmp is a tmpfs of its sandbox's own, and its workspace a tmpfs
// on the host: under runsc the host cannot reach the first (gVisor's /tmp
// lives in its Sentry), and each is as large as --tmp-size. A session's
// files are reached from the host at any time, so all it may write lives
// on the host: one tmpfs of the session's size (what /workspace, /tmp and
// the home share, so that the limit holds for them together), mounted at
// reaper.FilesDir, whose directories the sandbox binds. Runs keep their
// layout: nothing reaches into a run's /tmp, and one mount fewer is
// faster to make.
//
// Under runsc the sandbox's writes to a bound directory go through its
// gofer to the host's files, and gVisor revalidates what it caches of
// them (runsc's default --file-access-mounts=shared): the host sees the
// sandbox's writes (inotify too), and the sandbox the host's.

// sessionRoot is a directory of the sandbox the host holds for a session.
type sessionRoot struct {
	// sandbox is its path in the sandbox; dir is where it is in the
	// files tmpfs.
	sandbox, dir string
}

// sessionRoots are the directories of a session the host reads and
// writes. /home is bound whole (a mount point every Debian image has,
// which a read-only root could not get at run time), root's, and user,
// the sandbox user's, in it.
var sessionRoots = []sessionRoot{
	{oci.Workspace, "workspace"},
	{"/tmp", "tmp"},
	{contract.SessionHome, "home/user"},
}

// sessionWorkspaceDir is the host directory a session binds at /workspace.
func sessionWorkspaceDir(runDir string) string {
	return filepath.Join(reaper.FilesDir(runDir), sessionRoots[0].dir)
}

// mountSessionFiles mounts the session's files tmpfs, of the request's
// size, and makes its directories: /workspace and /home/user the sandbox
// user's (uid:gid on the host), /tmp everyone's with the sticky bit.
func (sb *sandbox) mountSessionFiles(uid, gid uint32) error {
	dir := reaper.FilesDir(sb.RunDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating session files: %w", err)
	}
	// Its root is root's and never bound: only its directories are.
	opts := "size=" + strconv.FormatInt(sb.Req.TmpBytes, 10) + ",mode=0755"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting session files: %w", err)
	}
	for _, d := range []struct {
		name  string
		mode  os.FileMode
		owned bool
	}{
		{"workspace", 0o755, true},
		{"tmp", 0o777 | os.ModeSticky, false},
		{"home", 0o755, false},
		{"home/user", 0o755, true},
	} {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			return fmt.Errorf("creating session files: %w", err)
		}
		// Mkdir's mode passes through the umask; Chmod's does not.
		if err := os.Chmod(p, d.mode); err != nil {
			return fmt.Errorf("creating session files: %w", err)
		}
		if d.owned {
			if err := os.Chown(p, int(uid), int(gid)); err != nil {
				return fmt.Errorf("creating session files: %w", err)
			}
		}
	}
	sb.Dirs.Workspace = filepath.Join(dir, "workspace")
	sb.Dirs.Tmp = filepath.Join(dir, "tmp")
	sb.Dirs.Home = filepath.Join(dir, "home")
	return nil
}

// sandboxPath is a path in a session's sandbox under one of its roots.
type sandboxPath struct {
	// abs is the path, cleaned; rel is the part under the root ("." for
	// the root itself).
	abs, rel string
	root     int
}

// parseSandboxPath checks that p is an absolute path under one of a
// session's roots. It is cleaned first, as the sandbox's kernel would
// read it: "/tmp/a/../b" is /tmp/b, "/tmp/.." is / and refused. What it
// names is found later, inside its root only.
func parseSandboxPath(field, p string) (sandboxPath, error) {
	if len(p) > contract.MaxPathBytes {
		return sandboxPath{}, &contract.PathError{Field: field, Path: contract.CutPath(p), Err: contract.ErrNameTooLong}
	}
	if !path.IsAbs(p) || strings.ContainsRune(p, 0) {
		return sandboxPath{}, contract.FieldErr(field, "%q must be an absolute path under /workspace, /tmp or %s", contract.CutPath(p), contract.SessionHome)
	}
	clean := path.Clean(p)
	for i, r := range sessionRoots {
		if clean == r.sandbox {
			return sandboxPath{abs: clean, rel: ".", root: i}, nil
		}
		if rest, ok := strings.CutPrefix(clean, r.sandbox+"/"); ok {
			return sandboxPath{abs: clean, rel: rest, root: i}, nil
		}
	}
	return sandboxPath{}, contract.FieldErr(field, "%q is not under /workspace, /tmp or %s, the directories of a session that can be read and written", contract.CutPath(p), contract.SessionHome)
}

// sessionFiles is a session opened for its files.
type sessionFiles struct {
	s *liveSession
	// files is the root of the files tmpfs.
	files *os.Root
	// uid and gid are the sandbox user's on the host; shift is what the
	// sandbox's user namespace adds to an id (0 without one).
	uid, gid, shift uint32
}

// openSessionFiles opens session id of caller for its files, and counts
// as a use of it (its idle time starts again).
func (r *Layer) openSessionFiles(ctx context.Context, id, caller string) (*sessionFiles, error) {
	s, err := r.loadSession(ctx, id, caller, false)
	if err != nil {
		return nil, err
	}
	files, err := os.OpenRoot(reaper.FilesDir(s.runDir))
	if err != nil {
		return nil, fmt.Errorf("opening session files: %w", err)
	}
	req := s.rec.Request
	uid, gid, err := box.HostIDsOf(s.runDir, req.UID, req.GID)
	if err != nil {
		files.Close()
		return nil, err
	}
	s.touch(ctx, time.Now())
	return &sessionFiles{s: s, files: files, uid: uid, gid: gid, shift: uid - req.UID}, nil
}

func (sf *sessionFiles) Close() error { return sf.files.Close() }

// root opens p's root. Each root is a root of its own: a symlink that
// leads out of it, even into another of the session's, is not followed,
// nor is an absolute one (os.Root resolves every name component by
// component, with openat and no symlink followed by the kernel, so a
// sandbox that swaps a directory for a symlink meanwhile cannot lead it
// out either). It is opened through the files tmpfs's root: the sandbox
// can replace its home (a directory, not a mount point) by a symlink, and
// that one leads nowhere but into the tmpfs.
func (sf *sessionFiles) root(p sandboxPath) (*os.Root, error) {
	root, err := box.OpenDirRoot(sf.files, sessionRoots[p.root].dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", sessionRoots[p.root].sandbox, err)
	}
	return root, nil
}

// sandboxID is a host uid or gid as the sandbox sees it.
func (sf *sessionFiles) sandboxID(id uint32) uint32 {
	if sf.shift == 0 {
		return id
	}
	if id >= sf.shift && id-sf.shift < userns.Size {
		return id - sf.shift
	}
	// Not of its namespace (the host's root): its overflow id.
	return 65534
}
