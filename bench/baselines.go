//go:build linux

package main

// The baselines: host python, runc run on a bundle made from boxer's own
// spec (the base of every ratio), runc create, start, delete on the same
// bundle (taskmodel.go), and ctr run; the bundle, its cgroups, the layer.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// cgroupParent holds the bench's own cgroups.
var cgroupParent = fmt.Sprintf("/boxer-bench-%d", os.Getpid())

// baselines are the rows boxer's are read against: host python, runc run
// on the bench's bundle (every ratio's base), the same bundle the way
// containerd's runc shim runs a task (taskmodel.go), and ctr run.
func baselines(work, runc, address, image string) []*contender {
	return []*contender{
		{name: "host python", once: command(func(int) *exec.Cmd { return exec.Command(hostPython(), "-c", "print(1)") })},
		{name: "runc run (bundle)", once: func(i int) error {
			// Writing its bundle (well under a millisecond) is timed with it.
			bundle, err := runBundle(work, i)
			if err != nil {
				return err
			}
			return command(func(int) *exec.Cmd {
				return exec.Command(runc, "run", "--bundle", bundle, fmt.Sprintf("bench-runc-%d-%d", os.Getpid(), i+2))
			})(i)
		}},
		{name: "runc create, start, delete", once: threeStep(runc, work, &reaping{})},
		{name: "ctr run", once: command(ctrRun(address, image, "ctr"))},
	}
}

// ctrRun is ctr run's command line for the row called name: the python
// image, with flags as close to boxer's hardening as ctr has, extra first.
func ctrRun(address, image, name string, extra ...string) func(i int) *exec.Cmd {
	ctr := filepath.Join(daemon.LibexecDir, "ctr")
	return func(i int) *exec.Cmd {
		args := append([]string{"-a", address, "-n", "boxer", "run", "--rm", "--read-only", "--seccomp",
			"--memory-limit", "268435456", "--cpus", "1", "--user", "65534:65534",
			"--mount", "type=tmpfs,src=tmpfs,dst=/tmp,options=nosuid:nodev:size=67108864"}, extra...)
		args = append(args, image, fmt.Sprintf("bench-%s-%d-%d", name, os.Getpid(), i+2), "python3", "-c", "print(1)")
		return exec.Command(ctr, args...)
	}
}

// removeCgroups removes a cgroup and the ones under it (podman makes one
// for conmon) in every hierarchy, deepest first; only empty ones can go.
func removeCgroups(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(cgroups.Root, "*", parent))
	if d := filepath.Join(cgroups.Root, parent); cgroups.DetectMode() == cgroups.Unified {
		dirs = []string{d}
	}
	var all []string
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(all)))
	for _, d := range all {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			progress("removing cgroup %s: %v", d, err)
		}
	}
}

// pythonLayer is the cached layer of boxer's python image.
func pythonLayer(cache string) (string, error) {
	layers, _ := filepath.Glob(filepath.Join(cache, "*", "layer.tar"))
	if len(layers) == 0 {
		return "", errors.New("no cached layer under " + cache + ": run 'boxer setup' first")
	}
	// The smallest cached layer with python3 is the python preset's.
	sort.Slice(layers, func(i, j int) bool { return size(layers[i]) < size(layers[j]) })
	for _, l := range layers {
		if out, err := exec.Command("tar", "-tf", l, "usr/bin/python3").CombinedOutput(); err == nil && len(out) > 0 {
			return l, nil
		}
	}
	return "", errors.New("no cached layer with python3 under " + cache + ": run 'boxer setup --lang python'")
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// makeBundle unpacks the python layer and writes boxer's own hardened spec
// for `python3 -c 'print(1)'` next to it.
func makeBundle(dir, layer string) error {
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return err
	}
	// tar(1) keeps owners, modes and links exactly.
	if out, err := exec.Command("tar", "-C", rootfs, "-xf", layer).CombinedOutput(); err != nil {
		return fmt.Errorf("unpacking layer: %v: %s", err, out)
	}
	spec, err := oci.New(context.Background(), "bench",
		oci.WithHardenedBase,
		oci.WithProcess([]string{"python3", "-c", "print(1)"}, []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"}, oci.Workspace),
		oci.WithLimits(oci.Limits{MemoryBytes: runner.DefaultMemory, CPUs: 1, Pids: runner.DefaultPids, TmpBytes: runner.DefaultTmpSize, NoFile: 1024}),
		oci.WithSeccomp(seccomp.DefaultProfile()),
		oci.WithCgroupsPath(cgroupParent+"/runc"),
	)
	if err != nil {
		return err
	}
	spec.Root.Path = rootfs
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

// runBundle is the bundle of runc run i: the bench's bundle's spec with a
// cgroup of the run's own, as containerd gives each container (runs at
// once must not share one).
func runBundle(work string, i int) (string, error) {
	data, err := os.ReadFile(filepath.Join(work, "config.json"))
	if err != nil {
		return "", err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return "", err
	}
	spec.Linux.CgroupsPath = fmt.Sprintf("%s/runc-%d", cgroupParent, i+2)
	if data, err = json.Marshal(spec); err != nil {
		return "", err
	}
	dir := filepath.Join(work, "runs", strconv.Itoa(i+2))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

// hostPython is the distribution's python3: a version manager's shim on the
// PATH would time itself, not python.
func hostPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}
