package daemon

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultPath is the PATH systemd gives a service, so a system containerd's
// PATH when boxer cannot read its environment.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RuntimeBinary finds a runtime (runc, runsc) the way boxer's own processes
// run it: boxer's libexec directory, where 'make deps' builds the pinned
// ones, then PATH.
func RuntimeBinary(name string) (string, error) {
	if p := filepath.Join(LibexecDir, name); isExecutable(p) {
		return p, nil
	}
	return exec.LookPath(name)
}

// DaemonPath is the PATH the private daemon runs with, which its runc shim
// inherits and searches for runc: the directory of the containerd binary,
// then boxer's libexec directory, then the usual ones.
func (c Config) DaemonPath() (string, error) {
	bin, err := c.binary()
	if err != nil {
		return "", err
	}
	return daemonPath(bin), nil
}

// LookPathIn finds an executable called name in the directories of path (a
// PATH value), as a process whose PATH that is would find it.
func LookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		// An empty or relative entry depends on the process's working
		// directory, which is not ours to know.
		if !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH %s", name, path)
}

// ServerPID returns the PID of the process that listens on the unix socket
// address (a containerd's), from the socket's inode in /proc/net/unix and
// the file descriptors in /proc/*/fd.
func ServerPID(address string) (int, error) {
	path := strings.TrimPrefix(address, "unix://")
	inode, err := listeningInode(path)
	if err != nil {
		return 0, err
	}
	target := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && l == target {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process holds the socket %s", path)
}

// listeningInode returns the inode of the listening unix socket bound to
// path, from /proc/net/unix ("Num RefCount Protocol Flags Type St Inode Path";
// flag 0x10000 is __SO_ACCEPTCON, a listening socket).
func listeningInode(path string) (string, error) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[7] != path {
			continue
		}
		flags, err := strconv.ParseUint(fields[3], 16, 32)
		if err == nil && flags&0x10000 != 0 {
			return fields[6], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading /proc/net/unix: %w", err)
	}
	return "", fmt.Errorf("no listening socket at %s", path)
}

// ProcessEnv returns the value of key in the environment process pid started
// with, and whether it is set.
func ProcessEnv(pid int, key string) (string, bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return "", false, err
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(key+"=")); ok {
			return string(v), true, nil
		}
	}
	return "", false, nil
}

// ContainerdPath returns the PATH of the containerd answering on address,
// read from its process's environment, and says where it comes from. When
// the process cannot be found or read (another PID namespace, a remote
// socket), it returns DefaultPath and says so.
func ContainerdPath(address string) (path, source string) {
	pid, err := ServerPID(address)
	if err != nil {
		return DefaultPath, fmt.Sprintf("default PATH (containerd's process not found: %v)", err)
	}
	path, ok, err := ProcessEnv(pid, "PATH")
	switch {
	case err != nil:
		return DefaultPath, fmt.Sprintf("default PATH (environment of containerd pid %d unreadable: %v)", pid, err)
	case !ok:
		return "", fmt.Sprintf("containerd pid %d has no PATH", pid)
	}
	return path, fmt.Sprintf("PATH of containerd pid %d", pid)
}
