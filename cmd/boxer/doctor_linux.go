package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/userns"
	"github.com/urfave/cli/v2"
)

// removeProbeDir ends what a runsc probe under dir left running (processes
// whose command line names dir), unmounts what is mounted under it, deepest
// first and until nothing is (mounts may be stacked), and removes it.
func removeProbeDir(dir string) {
	// A child runsc forked just before it was killed, in a session of its
	// own, may exec into its gofer or sandbox after a first look: look
	// again until none is left (once, on a loaded host, a gofer and a
	// sandbox of the KVM probe outlived doctor). Before its exec, such a
	// child names dir in its environment (TMPDIR) only.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids := processesNaming(dir + "/")
		pids = append(pids, processesWithEnv("TMPDIR="+dir)...)
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for {
		points := mountsUnder(dir)
		if len(points) == 0 {
			break
		}
		unmounted := false
		for _, p := range points {
			if syscall.Unmount(p, syscall.MNT_DETACH) == nil {
				unmounted = true
			}
		}
		if !unmounted {
			break
		}
	}
	_ = os.RemoveAll(dir)
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points
}

// processesNaming lists the processes (other than this one) whose command
// line contains s.
func processesNaming(s string) []int {
	return processesWhere("cmdline", func(data []byte) bool { return bytes.Contains(data, []byte(s)) })
}

// processesWithEnv lists the processes (other than this one) with the
// environment variable kv (NAME=VALUE) as it is.
func processesWithEnv(kv string) []int {
	return processesWhere("environ", func(data []byte) bool {
		for _, v := range bytes.Split(data, []byte{0}) {
			if string(v) == kv {
				return true
			}
		}
		return false
	})
}

// processesWhere lists the processes (other than this one) whose
// /proc/PID/file match says yes to.
func processesWhere(file string, match func([]byte) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if data, err := os.ReadFile(filepath.Join("/proc", e.Name(), file)); err == nil && match(data) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// initChecks says where boxer-init, every sandbox's PID 1, is found.
func initChecks() []check {
	ch := check{name: "boxer-init", required: true}
	p, err := runner.InitBinary()
	if err != nil {
		ch.detail = err.Error()
		return []check{ch}
	}
	ch.ok, ch.detail = true, p
	return []check{ch}
}

// usernsCheck makes a user namespace and mounts an idmapped root through
// it, as a runc sandbox's are made, unless the operator runs sandboxes in
// the host's (--userns=host).
func usernsCheck(c *cli.Context) check {
	ch := check{name: "userns", required: true}
	o, err := usernsOptions(c)
	switch {
	case err != nil:
		ch.detail = err.Error()
	case o.Host:
		ch.required, ch.detail = false, "off (--userns=host): runc sandboxes share the host's uids and per-user limits (inotify, signals, pipes)"
	default:
		rng, _ := userns.ParseRange(o.Range)
		ch.detail, err = userns.Probe(userns.Options{Dir: userns.LeaseDir, Range: rng}, daemon.FromEnv().Root)
		if errors.Is(err, userns.ErrNoIDMap) {
			ch.detail = err.Error() + ": sandboxes' roots are idmapped for their namespaces: run Linux 5.19 or later, keep boxer's images (BOXER_ROOT) on a filesystem that supports idmapped mounts (ext4, xfs, btrfs), or run boxer with --userns=host"
		} else if err != nil {
			ch.detail = err.Error() + ": install util-linux (unshare), allow user namespaces (user.max_user_namespaces > 0), or run boxer with --userns=host to share the host's ids"
		} else {
			ch.ok = true
		}
	}
	return ch
}
