package reaper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ownerFile, in a run directory, names the boxer process the run belongs
// to; namespaceFile, the containerd namespace of its container: a reaper
// of another namespace leaves the directory alone.
const (
	ownerFile     = "owner"
	namespaceFile = "namespace"
)

// RunDirNamespace is the containerd namespace a run directory belongs to,
// "" if it does not say.
func RunDirNamespace(dir string) string {
	ns, _ := os.ReadFile(filepath.Join(dir, namespaceFile))
	return string(ns)
}

// Self identifies this process across PID reuse: "pid:starttime".
func Self() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + ":" + processStart(pid)
}

// OwnerOf identifies process pid as Self does, "" if it is gone.
func OwnerOf(pid int) string {
	start := processStart(pid)
	if start == "" {
		return ""
	}
	return strconv.Itoa(pid) + ":" + start
}

// RunDirOwner is the owner a run directory names, "" if none.
func RunDirOwner(dir string) string {
	owner, _ := os.ReadFile(filepath.Join(dir, ownerFile))
	return string(owner)
}

// Alive reports whether the process an owner string names still runs.
func Alive(owner string) bool {
	pidStr, start, ok := strings.Cut(owner, ":")
	pid, err := strconv.Atoi(pidStr)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	return start != "" && processStart(pid) == start
}

// processStart is field 22 of /proc/PID/stat, the start time in clock ticks
// (proc(5)).
func processStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		// A zombie is dead: its parent has not waited for it yet (a
		// killed standby maker's parent is init, which may take its time).
		return ""
	}
	return f[19]
}

// MakeRunDir creates the run directory of sandbox id of namespace under
// runs and writes its namespace and then its owner, this process. The owner
// file is written atomically: a concurrent boxer's reaper must never read
// it half-written (an empty owner is a dead one) and remove the directory.
func MakeRunDir(runs, namespace, id string) (string, error) {
	dir := filepath.Join(runs, id)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", fmt.Errorf("creating run directory: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, namespaceFile), []byte(namespace), 0o600); err != nil {
		return dir, fmt.Errorf("writing run namespace: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, ownerFile), []byte(Self()), 0o600); err != nil {
		return dir, fmt.Errorf("writing run owner: %w", err)
	}
	return dir, nil
}

// AdoptRunDir makes this process the owner of a run directory another
// made (a claimed standby's).
func AdoptRunDir(dir string) error { return HandRunDir(dir, Self()) }

// HandRunDir makes owner the owner of a run directory: while it lives, no
// reaper removes the directory's sandbox, whatever its labels say (a run's
// sandbox handed to the process that removes it).
func HandRunDir(dir, owner string) error {
	if err := WriteFileAtomic(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
		return fmt.Errorf("writing run owner: %w", err)
	}
	return nil
}

// WorkspaceDir is where a run directory's workspace (a tmpfs) is mounted.
func WorkspaceDir(runDir string) string { return filepath.Join(runDir, "workspace") }

// FilesDir is where a session's files are mounted: one tmpfs holding
// what its sandbox binds at /workspace, /tmp and /home (see
// runner/session_roots_linux.go).
func FilesDir(runDir string) string { return filepath.Join(runDir, "files") }

// RunMountDir is where a run directory's /run (a tmpfs holding the run's
// secrets) is mounted.
func RunMountDir(runDir string) string { return filepath.Join(runDir, "run") }

// RootDir is where a run directory's root (the image's view, idmapped for
// the sandbox's user namespace) is mounted.
func RootDir(runDir string) string { return filepath.Join(runDir, "rootfs") }

// RemoveRunDir unmounts a run directory's root, workspace (a session's
// files), secrets, network namespace and user namespace, if any, and
// removes the directory; it never removes through a mount.
func RemoveRunDir(dir string) error {
	for _, m := range []string{RootDir(dir), WorkspaceDir(dir), FilesDir(dir), RunMountDir(dir), filepath.Join(dir, "netns"), filepath.Join(dir, "userns")} {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmounting %s: %w", m, err)
		}
	}
	return os.RemoveAll(dir)
}

// WriteFileAtomic writes data to a temporary file next to path and renames
// it into place: a concurrent reader sees all of it or none. boxer writes
// every file another boxer process may read this way (owner files, runtime
// wrappers).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// dirVerdict is what the reaper does with a run directory.
type dirVerdict int

const (
	keepDir dirVerdict = iota
	removeDir
	removeUnlessContainer
)

// runDirVerdict decides for a run directory from its owner file (contents,
// read error) and its age. A run writes its owner right after creating the
// directory: a directory without an owner, or with an empty one, is another
// run's being made, unless it is old. One whose owner is dead goes, unless
// its container exists (then the container's reaping removes both).
func runDirVerdict(owner []byte, readErr error, age time.Duration) dirVerdict {
	switch {
	case readErr != nil || len(owner) == 0:
		if age > time.Minute {
			return removeDir
		}
		return keepDir
	case Alive(string(owner)):
		return keepDir
	}
	return removeUnlessContainer
}
