package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPrivateDaemonRace starts 8 boxer processes at once on a host where no
// containerd runs (a fresh BOXER_STATE): all must succeed, and exactly one
// private containerd must exist afterwards.
func TestPrivateDaemonRace(t *testing.T) {
	base, err := os.MkdirTemp("", "bxr-")
	if err != nil {
		t.Fatal(err)
	}
	// As /run is (see TestMain).
	must(t, os.Chmod(base, 0o711))
	root, state := filepath.Join(base, "r"), filepath.Join(base, "s")
	env := boxerEnv(root, state)
	t.Cleanup(func() {
		stopDaemon(env)
		os.RemoveAll(base)
	})

	const n = 8
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(boxerBin, "image", "ls")
			cmd.Env = env
			<-start
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}(i)
	}
	close(start)
	wg.Wait()
	started := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("boxer %d: %v: %s", i, errs[i], outs[i])
		}
		started += strings.Count(outs[i], "starting private containerd")
	}
	if started != 1 {
		t.Errorf("%d boxers said they started containerd, want 1", started)
	}
	daemons := containerdsWithConfig(filepath.Join(state, "containerd.toml"))
	if len(daemons) != 1 {
		t.Fatalf("%d containerd processes for %s, want 1: %v", len(daemons), state, daemons)
	}
	pidFile, _ := os.ReadFile(filepath.Join(state, "containerd.pid"))
	if strings.TrimSpace(string(pidFile)) != strconv.Itoa(daemons[0]) {
		t.Errorf("pid file says %q, running daemon is %d", pidFile, daemons[0])
	}

	// status names it; a later call reuses it; stop ends it by PID.
	cmd := exec.Command(boxerBin, "containerd", "status")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "running  pid="+strconv.Itoa(daemons[0])) {
		t.Errorf("status: %q %v", out, err)
	}
	cmd = exec.Command(boxerBin, "image", "ls")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "starting") {
		t.Errorf("second call: %q %v", out, err)
	}
	stopDaemon(env)
	deadline := time.Now().Add(10 * time.Second)
	for len(containerdsWithConfig(filepath.Join(state, "containerd.toml"))) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("containerd still runs after 'boxer containerd stop'")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd = exec.Command(boxerBin, "containerd", "status")
	cmd.Env = env
	if out, _ := cmd.Output(); !strings.HasPrefix(string(out), "stopped") {
		t.Errorf("status after stop: %q", out)
	}
	for _, p := range processesMatching(base) {
		t.Errorf("process left behind: %s", p)
	}
}

// containerdsWithConfig lists the PIDs of containerd processes started with config.
func containerdsWithConfig(config string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if filepath.Base(args[0]) == "containerd" && strings.Contains(string(data), config) {
			pids = append(pids, pid)
		}
	}
	return pids
}
