//go:build linux

package main

// The baseline of issue 43's exec rows: `runc exec` of a command into a
// running container of the bench's hardened bundle, what a containerd exec
// costs at its floor, with no containerd, shim or boxer.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// runcExecRow is the name of the baseline's row.
const runcExecRow = "runc exec `true` into a running hardened bundle container"

// liveBundle is a container of the bench's bundle (makeBundle's spec),
// running until stop, for runc exec.
type liveBundle struct {
	runc, id string
	pid      int
}

// startLiveBundle runs the bench's bundle under work detached, its first
// program a python3 that sleeps, in a cgroup of its own under the bench's.
func startLiveBundle(runc, work string) (_ *liveBundle, retErr error) {
	data, err := os.ReadFile(filepath.Join(work, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	spec.Process.Args = []string{"python3", "-c", "import time; time.sleep(1e9)"}
	spec.Linux.CgroupsPath = cgroupParent + "/runc-exec"
	if data, err = json.Marshal(spec); err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "runs", "exec")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		return nil, err
	}
	b := &liveBundle{runc: runc, id: fmt.Sprintf("bench-exec-%d", os.Getpid())}
	// The bench is the child subreaper while runc run -d hands the
	// container's first process over, so that it is the bench's child to
	// reap at the end (taskmodel.go's reaping, for one run); only then, so
	// that no other row's orphans become the bench's.
	r := &reaping{}
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.leave()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	// The container keeps runc's stdio: files, not pipes, which os/exec
	// would wait on to their end, the container's.
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return nil, err
	}
	defer errFile.Close()
	pidFile := filepath.Join(dir, "pid")
	cmd := exec.Command(runc, "run", "-d", "--bundle", dir, "--pid-file", pidFile, b.id)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, errFile
	if err := cmd.Run(); err != nil {
		said, _ := os.ReadFile(errFile.Name())
		return nil, fmt.Errorf("runc run -d: %v: %s", err, lastLine(string(said)))
	}
	defer func() {
		if retErr != nil {
			b.stop()
		}
	}()
	pid, err := os.ReadFile(pidFile)
	if err == nil {
		_, err = fmt.Sscan(string(pid), &b.pid)
	}
	if err != nil {
		return b, fmt.Errorf("runc run -d: pid file: %v", err)
	}
	return b, nil
}

// exec runs `runc exec` of true in the container, which must exit 0.
func (b *liveBundle) exec() error {
	out, err := exec.Command(b.runc, "exec", b.id, "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("runc exec: %v: %s", err, lastLine(string(out)))
	}
	return nil
}

// stop kills and removes the container and reaps its first process.
func (b *liveBundle) stop() {
	if out, err := exec.Command(b.runc, "delete", "--force", b.id).CombinedOutput(); err != nil {
		progress("removing container %s: %v: %s", b.id, err, lastLine(string(out)))
		return
	}
	if b.pid > 0 {
		_, _ = unix.Wait4(b.pid, nil, 0, nil)
	}
}
