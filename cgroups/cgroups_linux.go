package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/fault"
	"golang.org/x/sys/unix"
)

var (
	modeOnce sync.Once
	mode     Mode
)

// DetectMode returns the host's cgroup mode, found once with statfs as
// containerd/cgroups does.
func DetectMode() Mode {
	modeOnce.Do(func() { mode = detectMode(Root) })
	return mode
}

func detectMode(root string) Mode {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return Unavailable
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return Unified
	}
	if err := unix.Statfs(filepath.Join(root, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return Hybrid
	}
	if err := unix.Statfs(filepath.Join(root, "memory"), &st); err == nil && st.Type == unix.CGROUP_SUPER_MAGIC {
		return Legacy
	}
	return Unavailable
}

// Check returns an error naming what is missing when the host cannot enforce
// boxer's limits: each of Required() must be an active controller.
func Check(m Mode) error {
	return checkAt(m, Root)
}

func checkAt(m Mode, root string) error {
	var missing []string
	switch m {
	case Unified:
		data, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("reading cgroup controllers: %w", err)
		}
		have := parseControllers(data)
		for _, c := range required {
			if !have[c] {
				missing = append(missing, c)
			}
		}
	case Legacy, Hybrid:
		for _, c := range required {
			var st unix.Statfs_t
			if err := unix.Statfs(filepath.Join(root, c), &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
				missing = append(missing, c)
			}
		}
	default:
		return &fault.Error{
			What: "no cgroup filesystem is mounted at " + root,
			Do:   "mount one (mount -t cgroup2 none " + root + "): boxer cannot enforce its limits without it",
		}
	}
	if len(missing) == 0 {
		return nil
	}
	list := strings.Join(missing, ", ")
	if m == Unified {
		return &fault.Error{
			What: "cgroup v2 controllers " + list + " are not available in " + root,
			Do:   "the kernel must offer them to cgroup v2 (not bound to a v1 mount, not disabled with cgroup_disable=); boxer cannot enforce its limits without them ('boxer doctor' lists what the host has)",
		}
	}
	return &fault.Error{
		What: "cgroup v1 controllers " + list + " are not mounted under " + root,
		Do:   "mount each (mount -t cgroup -o NAME cgroup " + root + "/NAME) or boot with cgroup v2; boxer cannot enforce its limits without them ('boxer doctor' lists what the host has)",
	}
}

// Controllers lists the controllers available in mode m, for doctor.
func Controllers(m Mode) []string {
	switch m {
	case Unified:
		data, _ := os.ReadFile(filepath.Join(Root, "cgroup.controllers"))
		return strings.Fields(string(data))
	case Legacy, Hybrid:
		entries, _ := os.ReadDir(Root)
		var out []string
		for _, e := range entries {
			var st unix.Statfs_t
			if unix.Statfs(filepath.Join(Root, e.Name()), &st) == nil && st.Type == unix.CGROUP_SUPER_MAGIC && !strings.HasPrefix(e.Name(), "name=") && e.Name() != "systemd" {
				out = append(out, e.Name())
			}
		}
		return out
	}
	return nil
}

// ReadStats reads the figures of the cgroup at path (the spec's
// cgroupsPath, absolute) while it still exists. Files the kernel does not
// have leave their figure at zero.
func ReadStats(m Mode, path string) (Stats, error) {
	return readStatsAt(m, Root, path)
}

func readStatsAt(m Mode, root, path string) (Stats, error) {
	var st Stats
	var errs []error
	switch m {
	case Unified:
		dir := filepath.Join(root, path)
		st.MemoryPeakBytes, errs = readOne(errs, filepath.Join(dir, "memory.peak"), filepath.Join(dir, "memory.current"))
		st.MemoryBytes, errs = readOne(errs, filepath.Join(dir, "memory.current"))
		usec, err := readKeyedFile(filepath.Join(dir, "cpu.stat"), "usage_usec")
		errs = appendErr(errs, err)
		st.CPUTimeNs = usec * 1000
		st.OOMKills, err = readKeyedFile(filepath.Join(dir, "memory.events"), "oom_kill")
		errs = appendErr(errs, err)
	case Legacy, Hybrid:
		mem := filepath.Join(root, "memory", path)
		st.MemoryPeakBytes, errs = readOne(errs, filepath.Join(mem, "memory.max_usage_in_bytes"))
		st.MemoryBytes, errs = readOne(errs, filepath.Join(mem, "memory.usage_in_bytes"))
		st.CPUTimeNs, errs = readOne(errs, filepath.Join(root, "cpuacct", path, "cpuacct.usage"))
		var err error
		st.OOMKills, err = readKeyedFile(filepath.Join(mem, "memory.oom_control"), "oom_kill")
		errs = appendErr(errs, err)
	default:
		return st, errors.New("no cgroup filesystem")
	}
	return st, errors.Join(errs...)
}

// readOne reads the first of files that exists as a single number.
func readOne(errs []error, files ...string) (uint64, []error) {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, append(errs, err)
		}
		n, err := parseSingle(data, f)
		return n, appendErr(errs, err)
	}
	return 0, errs
}

func readKeyedFile(file, key string) (uint64, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := parseKeyed(bytes.NewReader(data), file, key)
	if errors.Is(err, ErrNoStat) {
		return 0, nil
	}
	return n, err
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// ReadLimits reads the limits the cgroup at path enforces. A file that is
// missing means its controller is not enabled there: an error, since boxer
// never runs a sandbox its limits do not hold.
func ReadLimits(m Mode, path string) (Limits, error) {
	return readLimitsAt(m, Root, path)
}

func readLimitsAt(m Mode, root, path string) (Limits, error) {
	var l Limits
	single := func(file string) (uint64, error) {
		data, err := os.ReadFile(file)
		if err != nil {
			return 0, fmt.Errorf("cannot read %s: %w", file, err)
		}
		return parseSingle(data, file)
	}
	var err error
	switch m {
	case Unified:
		dir := filepath.Join(root, path)
		if l.MemoryBytes, err = single(filepath.Join(dir, "memory.max")); err != nil {
			return l, err
		}
		if l.SwapBytes, err = single(filepath.Join(dir, "memory.swap.max")); errors.Is(err, fs.ErrNotExist) {
			// No swap accounting: the kernel was built without swap, so
			// there is none to limit.
			l.SwapBytes, err = 0, nil
		} else if err != nil {
			return l, err
		}
		data, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return l, fmt.Errorf("cannot read cpu.max: %w", err)
		}
		if l.CPUQuotaUs, l.CPUPeriodUs, err = parseCPUMax(data); err != nil {
			return l, err
		}
		l.Pids, err = single(filepath.Join(dir, "pids.max"))
		return l, err
	case Legacy, Hybrid:
		mem := filepath.Join(root, "memory", path)
		if l.MemoryBytes, err = single(filepath.Join(mem, "memory.limit_in_bytes")); err != nil {
			return l, err
		}
		memsw, err := single(filepath.Join(mem, "memory.memsw.limit_in_bytes"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Swap accounting is off (swapaccount=0): only a host without
			// swap keeps the no-swap promise.
			if hostHasSwap() {
				return l, errors.New("swap accounting is off (memory.memsw.* missing) and the host has swap: boot with swapaccount=1")
			}
		case err != nil:
			return l, err
		case memsw >= l.MemoryBytes:
			l.SwapBytes = memsw - l.MemoryBytes
		}
		quota, err := single(filepath.Join(root, "cpu", path, "cpu.cfs_quota_us"))
		if err != nil {
			// cfs_quota_us is -1 without a quota: parse it signed.
			data, rerr := os.ReadFile(filepath.Join(root, "cpu", path, "cpu.cfs_quota_us"))
			if rerr != nil || strings.TrimSpace(string(data)) != "-1" {
				return l, err
			}
			l.CPUQuotaUs = -1
		} else {
			l.CPUQuotaUs = int64(quota)
		}
		if l.CPUPeriodUs, err = single(filepath.Join(root, "cpu", path, "cpu.cfs_period_us")); err != nil {
			return l, err
		}
		l.Pids, err = single(filepath.Join(root, "pids", path, "pids.max"))
		return l, err
	}
	return l, errors.New("no cgroup filesystem")
}

// hostHasSwap reports whether any swap is configured, from /proc/swaps.
func hostHasSwap() bool {
	data, err := os.ReadFile("/proc/swaps")
	return err == nil && strings.Count(strings.TrimSpace(string(data)), "\n") > 0
}

// Remove deletes the cgroup at path in every hierarchy, if it is there and
// empty. A runtime that fails half-way through creating a sandbox (runsc
// does) can leave it behind; rmdir never removes a cgroup with processes.
func Remove(m Mode, path string) error {
	dirs, err := dirsAt(m, Root, path)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// Destroy removes the cgroup at path like Remove, but a cgroup that still
// has processes has them killed first and is retried until wait has passed:
// a runtime's helpers (gVisor's gofer and sandbox processes) can outlive
// the task containerd deleted by a few milliseconds, or by ever, when the
// runtime lost track of them. Only for a sandbox's own cgroup, whose
// processes are all the sandbox's.
func Destroy(m Mode, path string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := Remove(m, path)
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		Kill(m, path)
		time.Sleep(10 * time.Millisecond)
	}
}

// Exists reports whether the cgroup at path is there in any hierarchy.
func Exists(m Mode, path string) bool {
	return existsAt(m, Root, path)
}

func existsAt(m Mode, root, path string) bool {
	dirs, _ := dirsAt(m, root, path)
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// Kill sends SIGKILL to every process in the cgroup at path and says how
// many it found. Only for a sandbox's own cgroup, whose processes are all
// the sandbox's.
func Kill(m Mode, path string) int {
	dirs, _ := dirsAt(m, Root, path)
	seen := map[int]bool{}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 && !seen[pid] {
				seen[pid] = true
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
	return len(seen)
}

// dirsAt lists the directories of the cgroup at path: one on cgroup v2, one
// per hierarchy on v1 and hybrid hosts.
func dirsAt(m Mode, root, path string) ([]string, error) {
	switch m {
	case Unified:
		return []string{filepath.Join(root, path)}, nil
	case Legacy, Hybrid:
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, err
		}
		var dirs []string
		for _, e := range entries {
			dirs = append(dirs, filepath.Join(root, e.Name(), path))
		}
		return dirs, nil
	}
	return nil, nil
}
