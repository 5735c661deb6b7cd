//go:build linux

package main

// The baselines: host python, runc run on a bundle made from boxer's own
// spec, and ctr run on runsc through boxer's wrapper.

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

// runscWrapper runs one boxer sandbox on runsc so that boxer writes its
// runsc wrapper, and returns the wrapper's path for ctr's --runc-binary: both
// rows then run runsc with the same flags.
func runscWrapper(boxerBin, address string) (string, error) {
	out, err := exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "bash", "-c", "true").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("boxer run --runtime runsc: %v: %s", err, lastLine(string(out)))
	}
	p := filepath.Join(daemon.FromEnv().State, "runsc")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("runsc wrapper: %w", err)
	}
	return p, nil
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
