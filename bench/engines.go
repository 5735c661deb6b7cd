//go:build linux

package main

// podman run and docker run, with the hardening boxer applies, where
// installed.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/daemon"
)

// hardening is what podman and docker are asked for: boxer's defaults.
var hardening = []string{"--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp:size=64m",
	"--memory", "256m", "--cpus", "1", "--pids-limit", "64", "--cap-drop", "ALL",
	"--security-opt", "no-new-privileges", "--user", "65534:65534"}

// podman returns podman's contender, with its own storage under work and
// runc as its runtime, or nil where podman is not installed.
func podman(work, layer, runc string) (*contender, func(), error) {
	bin, err := exec.LookPath("podman")
	if err != nil {
		return nil, nil, nil
	}
	root := filepath.Join(work, "podman")
	// cgroupfs: no systemd here; runc: crun refuses hybrid cgroups; the
	// rlimits podman raises by default are above this host's hard limits.
	base := []string{"--root", filepath.Join(root, "root"), "--runroot", filepath.Join(root, "run"),
		"--cgroup-manager", "cgroupfs", "--events-backend", "file", "--runtime", runc, "--storage-driver", "overlay"}
	stop := func() {
		_ = exec.Command(bin, append(base, "rmi", "--all", "--force")...).Run()
		unmountUnder(root)
	}
	if out, err := exec.Command(bin, append(base, "import", layer, "boxer-bench/python")...).CombinedOutput(); err != nil {
		stop()
		return nil, nil, fmt.Errorf("importing the image: %v: %s", err, lastLine(string(out)))
	}
	args := append(append(append([]string{}, base...), "run"), hardening...)
	args = append(args, "--cgroup-parent", cgroupParent+"/podman", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"boxer-bench/python", "python3", "-c", "print(1)")
	return &contender{name: "podman run", once: command(func(int) *exec.Cmd { return exec.Command(bin, args...) })}, stop, nil
}

// docker returns docker's contender: a private dockerd on boxer's private
// containerd, its data under work, runc its default runtime, stopped by the
// returned func; nil where docker is not installed.
func docker(work, layer, address, runc string) (*contender, func(), error) {
	dockerd, err := exec.LookPath("dockerd")
	if err != nil {
		return nil, nil, nil
	}
	cli := "/usr/bin/docker" // Debian's client, matching its dockerd
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("docker"); err != nil {
			return nil, nil, nil
		}
	}
	root := filepath.Join(work, "docker")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(root, "docker.sock")
	d := exec.Command(dockerd, "--containerd", address, "--containerd-namespace", "bench-moby",
		"--containerd-plugins-namespace", "bench-moby-plugins",
		"--data-root", filepath.Join(root, "data"), "--exec-root", filepath.Join(root, "exec"),
		"--pidfile", filepath.Join(root, "dockerd.pid"), "-H", "unix://"+sock,
		// No bridge, no firewall rules and no forwarding: by default
		// dockerd turns net.ipv4.ip_forward on and leaves it on.
		"--bridge", "none", "--iptables=false", "--ip6tables=false", "--ip-forward=false",
		"--ip-masq=false", "--userland-proxy=false",
		"--add-runtime", "bench-runc="+runc, "--default-runtime", "bench-runc")
	logf, err := os.Create(filepath.Join(root, "dockerd.log"))
	if err != nil {
		return nil, nil, err
	}
	d.Stdout, d.Stderr = logf, logf
	if err := d.Start(); err != nil {
		return nil, nil, err
	}
	base := []string{"-H", "unix://" + sock}
	stop := func() {
		_ = exec.Command(cli, append(base, "rmi", "--force", "boxer-bench/python")...).Run()
		_ = d.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = d.Process.Kill()
			<-done
		}
		logf.Close()
		unmountUnder(root)
		// dockerd's containerd namespaces, empty once it has stopped.
		for _, ns := range []string{"bench-moby", "bench-moby-plugins"} {
			_ = exec.Command(filepath.Join(daemon.LibexecDir, "ctr"), "-a", address, "namespaces", "rm", ns).Run()
		}
	}
	for deadline := time.Now().Add(30 * time.Second); exec.Command(cli, append(base, "version")...).Run() != nil; {
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("dockerd did not answer; see its log")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := exec.Command(cli, append(base, "import", layer, "boxer-bench/python")...).CombinedOutput(); err != nil {
		stop()
		return nil, nil, fmt.Errorf("importing the image: %v: %s", err, lastLine(string(out)))
	}
	args := append(append(append([]string{}, base...), "run"), hardening...)
	args = append(args, "--cgroup-parent", cgroupParent+"/docker", "boxer-bench/python", "python3", "-c", "print(1)")
	return &contender{name: "docker run", once: command(func(int) *exec.Cmd { return exec.Command(cli, args...) })}, stop, nil
}

// unmountUnder lazily unmounts whatever a container engine left mounted
// under dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
}
