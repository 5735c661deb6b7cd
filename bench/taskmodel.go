//go:build linux

package main

// The row "runc create, start, delete" runs the bench's bundle the way
// containerd's runc shim runs every task: `runc create`, `runc start`, wait
// for the process, `runc delete`, three executions of runc where `runc run`
// is one. No containerd, no shim, no boxer: the most any engine that drives
// runc through containerd's task API can reach against runc run, four at a
// time above all, where the machine's CPU is the limit (docs/bench/2026-11-24.md).

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// reaping makes the bench the child subreaper while a three-step run is in
// flight: the container's process, orphaned when `runc create` exits, is
// then the bench's child, and its end is waited for exactly, as the shim
// (itself a subreaper) does. It is off between such runs, so that no other
// row's orphans (a standby maker's) become the bench's.
type reaping struct {
	mu     sync.Mutex
	flight int
}

func (r *reaping) enter() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flight == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("becoming the child subreaper: %w", err)
		}
	}
	r.flight++
	return nil
}

func (r *reaping) leave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flight--; r.flight == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// threeStep is the contender's once: runc (the binary) on the bundle of run
// i (runBundle's, so that each run has a cgroup of its own), its output
// checked like every row's.
func threeStep(runc, work string, r *reaping) func(i int) error {
	return func(i int) error {
		if err := r.enter(); err != nil {
			return err
		}
		defer r.leave()
		bundle, err := runBundle(work, i)
		if err != nil {
			return err
		}
		id := fmt.Sprintf("bench-3step-%d-%d", os.Getpid(), i+2)
		pidFile := bundle + "/pid"
		out, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer out.Close()
		// The pipe is the container's stdout and stderr, and runc create's:
		// os/exec copies nothing from an *os.File, so Run returns while the
		// container holds it.
		create := exec.Command(runc, "create", "--bundle", bundle, "--pid-file", pidFile, id)
		create.Stdout, create.Stderr = w, w
		err = create.Run()
		w.Close()
		if err != nil {
			said, _ := io.ReadAll(out)
			return fmt.Errorf("runc create: %v: %s", err, lastLine(string(said)))
		}
		// After a failure: the container killed and removed, and its
		// process, the bench's child, reaped.
		var pid int
		deleted, waited := false, false
		defer func() {
			if !deleted {
				deleted = exec.Command(runc, "delete", "--force", id).Run() == nil
			}
			if deleted && pid > 0 && !waited { // killed: its end is near
				_, _ = unix.Wait4(pid, nil, 0, nil)
			}
		}()
		data, err := os.ReadFile(pidFile)
		if err == nil {
			_, err = fmt.Sscan(string(data), &pid)
		}
		if err != nil {
			return fmt.Errorf("runc create: pid file: %v", err)
		}
		if b, err := exec.Command(runc, "start", id).CombinedOutput(); err != nil {
			return fmt.Errorf("runc start: %v: %s", err, lastLine(string(b)))
		}
		printed, err := io.ReadAll(out)
		if err != nil {
			return err
		}
		var ws unix.WaitStatus
		_, err = unix.Wait4(pid, &ws, 0, nil)
		waited = err == nil
		if err != nil {
			return fmt.Errorf("waiting for the container's process %d: %w", pid, err)
		}
		if b, err := exec.Command(runc, "delete", id).CombinedOutput(); err != nil {
			return fmt.Errorf("runc delete: %v: %s", err, lastLine(string(b)))
		}
		deleted = true
		if ws.ExitStatus() != 0 || strings.TrimSpace(string(printed)) != "1" {
			return fmt.Errorf("exit %d, printed %q", ws.ExitStatus(), printed)
		}
		return nil
	}
}
