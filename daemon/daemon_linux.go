package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// startTimeout bounds how long boxer waits for a daemon it started to answer.
const startTimeout = 30 * time.Second

// Ensure starts the private daemon unless it already answers, and waits until
// it does. Concurrent callers (in any process) serialize on a lock file, so
// exactly one daemon is started. It reports whether this call started it.
func Ensure(ctx context.Context, c Config, progress io.Writer) (started bool, retErr error) {
	if Answers(c.Address()) {
		return false, nil
	}
	for _, dir := range []string{c.State, c.Root} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return false, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	lock, err := os.OpenFile(c.lockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("opening lock %s: %w", c.lockFile(), err)
	}
	defer lock.Close()
	if err := flock(ctx, lock); err != nil {
		return false, fmt.Errorf("locking %s: %w", c.lockFile(), err)
	}
	// Whoever held the lock before us may have started it.
	if Answers(c.Address()) {
		return false, nil
	}
	bin, err := c.binary()
	if err != nil {
		return false, err
	}
	if progress != nil {
		fmt.Fprintf(progress, "boxer: starting private containerd (%s) on %s\n", bin, c.Address())
	}
	if err := c.writeConfig(configVersion(bin)); err != nil {
		return false, err
	}
	logf, err := os.OpenFile(c.LogFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return false, fmt.Errorf("opening containerd log: %w", err)
	}
	defer logf.Close()
	// A stale socket from a daemon that died would make the new one fail.
	_ = os.Remove(c.Address())
	cmd := exec.Command(bin, "--config", c.ConfigFile())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = daemonEnv(bin)
	cmd.Dir = "/"
	// Its own session: the daemon outlives this boxer and ignores its terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", bin, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if retErr != nil {
			_ = cmd.Process.Kill()
			<-exited
			_ = os.Remove(c.PIDFile())
		}
	}()
	if err := os.WriteFile(c.PIDFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return false, fmt.Errorf("writing pid file: %w", err)
	}
	deadline := time.Now().Add(startTimeout)
	for !Answers(c.Address()) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("starting %s: %w: %s", bin, err, lastLine(c.LogFile()))
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("containerd did not answer on %s within %s: see %s", c.Address(), startTimeout, c.LogFile())
		}
	}
	// The daemon is not our child to wait for: it lives on after we exit.
	return true, nil
}

func flock(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// binary finds the containerd executable: BOXER_CONTAINERD, then boxer's
// libexec directory, then PATH.
func (c Config) binary() (string, error) {
	if c.Binary != "" {
		return c.Binary, nil
	}
	if p := filepath.Join(LibexecDir, "containerd"); isExecutable(p) {
		return p, nil
	}
	p, err := exec.LookPath("containerd")
	if err != nil {
		return "", fmt.Errorf("containerd not found: run 'make deps' (builds containerd into %s) or install containerd >= 1.6", LibexecDir)
	}
	return p, nil
}

// BinaryPath returns the containerd executable boxer would start.
func (c Config) BinaryPath() (string, error) { return c.binary() }

// RuncShimPath is the runc shim the private daemon runs for
// io.containerd.runc.v2: found as its PATH (daemonEnv) finds it.
func (c Config) RuncShimPath() (string, error) {
	bin, err := c.binary()
	if err != nil {
		return "", err
	}
	const name = "containerd-shim-runc-v2"
	for _, dir := range []string{filepath.Dir(bin), LibexecDir} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// daemonEnv gives the daemon a PATH that finds the shim next to it first.
func daemonEnv(bin string) []string {
	return []string{"PATH=" + daemonPath(bin)}
}

// daemonPath is the daemon's PATH: its shim and runc are the ones next to
// it, else boxer's (the pinned runc of 'make deps'), else the host's.
func daemonPath(bin string) string {
	return filepath.Dir(bin) + ":" + LibexecDir + ":" + DefaultPath
}

// configVersion is the config format the containerd binary reads: 2 for
// containerd 1.x, 3 for 2.x (which migrates it to its newest on load).
func configVersion(bin string) int {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return 3
	}
	// "containerd github.com/containerd/containerd 1.6.20~ds1 ..." or
	// "containerd github.com/containerd/containerd/v2 2.4.2 ..."
	f := strings.Fields(string(out))
	if len(f) >= 3 && strings.HasPrefix(f[2], "1.") {
		return 2
	}
	return 3
}

func (c Config) writeConfig(version int) error {
	// CRI, NRI and tracing are not used by boxer and cost start time.
	cfg := fmt.Sprintf(`version = %d
root = %q
state = %q
imports = []
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.cri.v1.images",
  "io.containerd.cri.v1.runtime",
  "io.containerd.podsandbox.controller.v1.podsandbox",
  "io.containerd.nri.v1.nri",
  "io.containerd.internal.v1.tracing",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = %q

[ttrpc]
  address = %q

# A shim is told to shut down once its last task is deleted, within this
# (containerd's default, 3s): past it containerd gives up, logs "the shim
# might be leaked", and the shim stays for good. Under load (seen at 3
# test runs on 2 cores) 3s was not enough.
[timeouts]
  "io.containerd.timeout.shim.shutdown" = "30s"
`, version, c.ContainerdRoot(), c.ContainerdState(), c.Address(), c.Address()+".ttrpc")
	return os.WriteFile(c.ConfigFile(), []byte(cfg), 0o600)
}

func lastLine(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	return string(lines[len(lines)-1])
}

// GetStatus reports whether the private daemon runs, and its PID.
func GetStatus(c Config) Status {
	st := Status{Address: c.Address()}
	st.PID = readPID(c.PIDFile())
	st.Running = st.PID > 0 && isContainerd(st.PID) && Answers(c.Address())
	return st
}

func readPID(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return pid
}

// isContainerd guards against a recycled PID: the process must be a containerd.
func isContainerd(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.HasPrefix(filepath.Base(exe), "containerd")
}

// Stop ends the private daemon by its PID: SIGTERM, then SIGKILL after a
// grace period. It reports whether there was one to stop.
func Stop(ctx context.Context, c Config) (bool, error) {
	pid := readPID(c.PIDFile())
	if pid <= 0 || !isContainerd(pid) {
		_ = os.Remove(c.PIDFile())
		return false, nil
	}
	if err := unix.Kill(pid, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
		return false, fmt.Errorf("signalling containerd %d: %w", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for isContainerd(pid) {
		if time.Now().After(deadline) {
			_ = unix.Kill(pid, unix.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = os.Remove(c.PIDFile())
	_ = os.Remove(c.Address())
	return true, nil
}
