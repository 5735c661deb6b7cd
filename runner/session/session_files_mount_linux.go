package session

// A session's files on the host: the tmpfs of what it may write, mounted.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/boxer-dev/boxer/reaper"
	"golang.org/x/sys/unix"
)

// A session's files live on the host, in one tmpfs of the session's size
// that its sandbox binds at /workspace, /tmp and /home (package sessionfs
// says why, and reaches them).

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
