//go:build linux

// Package leftover counts what sandboxes can leave behind in one containerd
// namespace, by kind: containerd's records (containers, tasks, active
// snapshots, leases) and the host's (shims, mounts, cgroups, boxer's run
// directories, the runtime's state). Two counts, one before and one after a
// stretch of runs, give what the runs left: Growth.
//
// It is the soak's (and any long-run check's) idea of "left behind", the one
// the integration tests' assertClean checks after each test. runc's state
// and the cgroups are the host's, found by namespace alone: another
// containerd's sandboxes in the same namespace are counted too.
package leftover

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/snapshots"
	containerd "github.com/containerd/containerd/v2/client"
	csnapshots "github.com/containerd/containerd/v2/core/snapshots"
)

// Kind is one sort of thing a sandbox can leave behind.
type Kind string

// The kinds, as reports name them.
const (
	Containers   Kind = "containers"
	Tasks        Kind = "tasks"
	Snapshots    Kind = "active snapshots"
	Leases       Kind = "leases"
	Shims        Kind = "shims"
	Mounts       Kind = "mounts"
	Cgroups      Kind = "cgroups"
	RunDirs      Kind = "run directories"
	RuntimeState Kind = "runtime state"
)

// Kinds lists every kind, in the order reports show them.
var Kinds = []Kind{Containers, Tasks, Snapshots, Leases, Shims, Mounts, Cgroups, RunDirs, RuntimeState}

// Found is what one count found: a name per thing, by kind. A name says
// which thing it is (a container's ID, a shim's PID and command line, a
// mount's ID and mount point), so that a thing that went and another that
// came are told apart.
type Found map[Kind][]string

// Total is the number of things found, of every kind.
func (f Found) Total() int {
	n := 0
	for _, names := range f {
		n += len(names)
	}
	return n
}

// Growth returns what after holds that before did not, by kind: what was
// left behind in between. What was there before and is still there is not
// counted.
func Growth(before, after Found) Found {
	grown := Found{}
	for _, k := range Kinds {
		for _, name := range after[k] {
			if !slices.Contains(before[k], name) {
				grown[k] = append(grown[k], name)
			}
		}
	}
	return grown
}

// Host says where a count looks on the host. Its paths are fields so that a
// test can point them at a fixture.
type Host struct {
	// Namespace is containerd's namespace of the sandboxes; Address the
	// containerd socket their shims serve ("" for any).
	Namespace string
	Address   string
	// Proc is procfs's mount point; Mountinfo the mount table read.
	Proc      string
	Mountinfo string
	// CgroupRoot is where cgroup filesystems are mounted.
	CgroupRoot string
	// Runs is boxer's directory of run directories.
	Runs string
	// MountRoots are directories where a mount, at or below one, is a
	// sandbox's.
	MountRoots []string
	// StateDirs are directories where each entry is one sandbox's runtime
	// state: containerd's task bundles and their work directories, and
	// runc's state, of the namespace.
	StateDirs []string
	// TaskRoots are containerd's task directories of all namespaces
	// (each holds a directory per namespace): mounts under another
	// namespace's are not this count's.
	TaskRoots []string
}

// HostOf is where the sandboxes of boxer's configuration cfg, on the
// containerd at address and in namespace, leave things on this host.
func HostOf(cfg daemon.Config, address, namespace string) Host {
	// containerd's state and root directories: the private daemon's, else
	// the system one's defaults (its configuration could move them).
	state, root := "/run/containerd", "/var/lib/containerd"
	if address == cfg.Address() {
		state, root = cfg.ContainerdState(), cfg.ContainerdRoot()
	}
	// A task's bundle is in the state directory, its work directory in
	// the root (core/runtime/v2/bundle.go).
	bundles := filepath.Join(state, reaper.TaskBundles, namespace)
	work := filepath.Join(root, reaper.TaskBundles, namespace)
	runc := filepath.Join(reaper.RuncRoot, namespace)
	return Host{
		Namespace:  namespace,
		Address:    address,
		Proc:       "/proc",
		Mountinfo:  "/proc/self/mountinfo",
		CgroupRoot: "/sys/fs/cgroup",
		Runs:       filepath.Join(cfg.State, "runs"),
		// boxer's own directories (the private daemon's root and state
		// are under them), the namespace's task bundles and runc's state.
		MountRoots: []string{cfg.State, cfg.Root, bundles, runc},
		StateDirs:  []string{bundles, work, runc},
		TaskRoots:  []string{filepath.Join(state, reaper.TaskBundles), filepath.Join(root, reaper.TaskBundles)},
	}
}

// Count counts what is in containerd, through client (whose default
// namespace must be h.Namespace), and on the host.
func Count(ctx context.Context, client *containerd.Client, h Host) (Found, error) {
	found, err := CountContainerd(ctx, client)
	if err != nil {
		return nil, err
	}
	host, err := h.Count()
	if err != nil {
		return nil, err
	}
	for k, names := range host {
		found[k] = names
	}
	return found, nil
}

// CountContainerd lists the containers, tasks, active snapshots (of boxer's
// snapshotter) and leases in client's default namespace.
func CountContainerd(ctx context.Context, client *containerd.Client) (Found, error) {
	found := Found{}
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range ctrs {
		found[Containers] = append(found[Containers], c.ID())
	}
	tasks, err := client.TaskService().List(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	for _, t := range tasks.Tasks {
		found[Tasks] = append(found[Tasks], t.ID)
	}
	// Only active snapshots are a run's: the images' layers are committed
	// and the shared views boxer keeps per image are views.
	if err := client.SnapshotService(snapshots.Snapshotter).Walk(ctx, func(_ context.Context, info csnapshots.Info) error {
		if info.Kind == csnapshots.KindActive {
			found[Snapshots] = append(found[Snapshots], info.Name)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("listing snapshots: %w", err)
	}
	ls, err := client.LeasesService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing leases: %w", err)
	}
	for _, l := range ls {
		found[Leases] = append(found[Leases], l.ID)
	}
	return found, nil
}

// Count counts the shims, mounts, cgroups, run directories and runtime
// state of h's namespace on the host. A directory that is not there holds
// nothing; only an unreadable process table or mount table is an error.
func (h Host) Count() (Found, error) {
	found := Found{}
	shims, err := h.shims()
	if err != nil {
		return nil, err
	}
	found[Shims] = shims
	mounts, err := h.mounts()
	if err != nil {
		return nil, err
	}
	found[Mounts] = mounts
	found[Cgroups] = h.cgroups()
	for _, d := range entries(h.Runs) {
		// Another namespace's runs are not this count's.
		if ns := reaper.RunDirNamespace(d); ns == "" || ns == h.Namespace {
			found[RunDirs] = append(found[RunDirs], d)
		}
	}
	for _, d := range h.StateDirs {
		found[RuntimeState] = append(found[RuntimeState], entries(d)...)
	}
	return found, nil
}

// shims lists the containerd shims of h's namespace (and address): any
// process whose program is containerd-shim* and whose -namespace is h's,
// its start, daemon and delete alike, as "PID command line".
func (h Host) shims() ([]string, error) {
	procs, err := os.ReadDir(h.Proc)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var out []string
	for _, p := range procs {
		data, err := os.ReadFile(filepath.Join(h.Proc, p.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue // not a process, gone, or a kernel thread
		}
		args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") || flagValue(args, "-namespace") != h.Namespace {
			continue
		}
		if h.Address != "" && flagValue(args, "-address") != h.Address {
			continue
		}
		out = append(out, p.Name()+" "+strings.Join(args, " "))
	}
	return out, nil
}

// ShimPIDs lists the PIDs of h's shims (see shims).
func (h Host) ShimPIDs() ([]int, error) {
	shims, err := h.shims()
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(shims))
	for _, s := range shims {
		pid, _, _ := strings.Cut(s, " ")
		if n, err := strconv.Atoi(pid); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

// flagValue is the argument after name in args, as the shim's flag parser
// reads "-namespace ns" (containerd's pkg/shim/shim.go).
func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// mounts lists the mounts at or below h.MountRoots as "ID mount point":
// mountinfo's first field tells a mount from another stacked at the same
// point.
func (h Host) mounts() ([]string, error) {
	data, err := os.ReadFile(h.Mountinfo)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw"
		// (proc(5)): the ID first, the mount point fifth, octal-escaped.
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		point := unescape(f[4])
		if h.otherNamespace(point) {
			continue
		}
		for _, root := range h.MountRoots {
			if root != "" && (point == root || strings.HasPrefix(point, strings.TrimSuffix(root, "/")+"/")) {
				out = append(out, f[0]+" "+point)
				break
			}
		}
	}
	return out, nil
}

// otherNamespace says whether a mount point belongs to another namespace's
// sandbox: under another namespace's task directory, or under a run
// directory that names another namespace.
func (h Host) otherNamespace(point string) bool {
	first := func(dir string) string {
		rest, ok := strings.CutPrefix(point, strings.TrimSuffix(dir, "/")+"/")
		if !ok {
			return ""
		}
		name, _, _ := strings.Cut(rest, "/")
		return name
	}
	for _, d := range h.TaskRoots {
		if ns := first(d); ns != "" && ns != h.Namespace {
			return true
		}
	}
	if h.Runs != "" {
		if id := first(h.Runs); id != "" {
			ns := reaper.RunDirNamespace(filepath.Join(h.Runs, id))
			return ns != "" && ns != h.Namespace
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash ("\040").
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return len(s) == 3
}

// cgroups lists the sandbox cgroups of h's namespace: the directories in
// the namespace's cgroup parent (reaper.CgroupsPath's), in every hierarchy
// (each v1 controller, the hybrid cgroup2 mount, or v2's one tree).
func (h Host) cgroups() []string {
	parent := path.Dir(reaper.CgroupsPath(h.Namespace, "id"))
	dirs, _ := filepath.Glob(filepath.Join(h.CgroupRoot, "*", parent))
	dirs = append(dirs, filepath.Join(h.CgroupRoot, parent))
	var out []string
	for _, d := range dirs {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if e.IsDir() {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// entries lists dir's entries as paths; none if it is not there.
func entries(dir string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}
