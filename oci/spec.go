// Package oci builds boxer's OCI runtime specs as functional options over
// runtime-spec types, in the style of containerd's pkg/oci.
package oci

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/containerd/containerd/v2/core/containers"
	coci "github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// SpecOpts is containerd's option type, so boxer's options and containerd's
// own (WithProcessArgs, WithEnv, ...) compose freely.
type SpecOpts = coci.SpecOpts

// Paths inside every sandbox.
const (
	// Workspace is the writable, size-limited working directory.
	Workspace = "/workspace"
	// CodeDir holds the program's code and boxer-init, bind-mounted
	// read-only.
	CodeDir = "/code"
	// Hostname is the fixed host name every sandbox sees.
	Hostname = "boxer"
	// InitPath is boxer-init, every sandbox's PID 1, in the code
	// directory the sandbox binds read-only: a mount point every image
	// has, which the runtime need not create (runsc's gofer cannot create
	// one in a read-only root).
	InitPath = CodeDir + "/.boxer-init"
)

// New returns the spec for container id after applying opts in order to an
// empty spec. The first option is normally WithHardenedBase.
func New(ctx context.Context, id string, opts ...SpecOpts) (*specs.Spec, error) {
	s := &specs.Spec{}
	if err := coci.ApplyOpts(ctx, nil, &containers.Container{ID: id}, s, opts...); err != nil {
		return nil, err
	}
	return s, nil
}

// WithHardenedBase replaces the spec with boxer's always-on hardening: a
// read-only root, no capabilities, no_new_privs, fresh namespaces (with an
// empty network namespace), masked /proc paths, read-only /proc/sys and /sys,
// only the standard devices, RLIMIT_CORE 0 and a fixed hostname. Limits,
// seccomp, user and process come from later options.
func WithHardenedBase(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
	*s = specs.Spec{
		Version:  specs.Version,
		Hostname: Hostname,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Process: &specs.Process{
			User:            specs.User{UID: 65534, GID: 65534},
			Cwd:             Workspace,
			Env:             []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			NoNewPrivileges: true,
			// Empty, not nil: a nil set would let the runtime pick defaults.
			Capabilities: &specs.LinuxCapabilities{
				Bounding:    []string{},
				Effective:   []string{},
				Inheritable: []string{},
				Permitted:   []string{},
				Ambient:     []string{},
			},
			Rlimits: []specs.POSIXRlimit{
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
			},
			// Make the sandbox the kernel's first choice should the host run out
			// of memory; raising the score needs no privilege.
			OOMScoreAdj: intPtr(1000),
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=65536k"}},
			{Destination: Workspace, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=0755", "uid=65534", "gid=65534", "size=65536k"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.MountNamespace},
				{Type: specs.CgroupNamespace},
				// A fresh network namespace holds only a loopback device.
				{Type: specs.NetworkNamespace},
			},
			Resources: &specs.LinuxResources{
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
			},
			MaskedPaths: []string{
				"/proc/acpi",
				"/proc/asound",
				"/proc/interrupts",
				"/proc/kallsyms",
				"/proc/kcore",
				"/proc/keys",
				"/proc/latency_stats",
				"/proc/modules",
				"/proc/sched_debug",
				"/proc/scsi",
				"/proc/timer_list",
				"/proc/timer_stats",
				"/sys/devices/virtual/powercap",
				"/sys/firmware",
				"/sys/fs/cgroup",
				"/sys/kernel",
			},
			ReadonlyPaths: []string{
				"/proc/bus",
				"/proc/fs",
				"/proc/irq",
				"/proc/sys",
				"/proc/sysrq-trigger",
			},
		},
	}
	// The standard device nodes: runc creates them, the device cgroup allows them.
	for _, d := range standardDevices {
		s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{
			Allow: true, Type: "c", Major: int64Ptr(d.major), Minor: int64Ptr(d.minor), Access: "rwm",
		})
	}
	return nil
}

var standardDevices = []struct{ major, minor int64 }{
	{1, 3}, // null
	{1, 5}, // zero
	{1, 7}, // full
	{1, 8}, // random
	{1, 9}, // urandom
	{5, 0}, // tty
	{5, 2}, // ptmx
}

// Limits are the resource limits of one sandbox.
type Limits struct {
	MemoryBytes int64   // memory limit; swap is not allowed
	CPUs        float64 // CPU quota in cores
	Pids        int64   // process and thread cap
	TmpBytes    int64   // size of /tmp and of /workspace
	NoFile      uint64  // RLIMIT_NOFILE, soft and hard
}

// cpuPeriod is the CFS period in microseconds, the kernel's default.
const cpuPeriod = 100000

// CPUQuota is the CFS quota and period, in microseconds, for l.CPUs cores.
func (l Limits) CPUQuota() (int64, uint64) {
	return int64(l.CPUs * cpuPeriod), cpuPeriod
}

// WithLimits sets the cgroup memory, swap, CPU and pids limits, the tmpfs
// sizes of /tmp and /workspace and RLIMIT_NOFILE.
func WithLimits(l Limits) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		if l.MemoryBytes <= 0 || l.CPUs <= 0 || l.Pids <= 0 || l.TmpBytes <= 0 || l.NoFile == 0 {
			return fmt.Errorf("invalid limits %+v: every limit must be positive", l)
		}
		r := resources(s)
		// memory+swap equal to memory: the sandbox cannot swap.
		swap := l.MemoryBytes
		swappiness := uint64(0)
		r.Memory = &specs.LinuxMemory{Limit: &l.MemoryBytes, Swap: &swap, Swappiness: &swappiness}
		quota, period := l.CPUQuota()
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
		r.Pids = &specs.LinuxPids{Limit: &l.Pids}
		size := "size=" + strconv.FormatInt(l.TmpBytes, 10)
		for i := range s.Mounts {
			if m := &s.Mounts[i]; m.Type == "tmpfs" && (m.Destination == "/tmp" || m.Destination == Workspace || m.Destination == "/dev/shm") {
				m.Options = replaceOption(m.Options, "size=", size)
			}
		}
		setRlimit(process(s), "RLIMIT_NOFILE", l.NoFile)
		return nil
	}
}

// WithRlimit sets the soft and hard limit typ (such as "RLIMIT_NPROC") of
// the process.
func WithRlimit(typ string, v uint64) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		setRlimit(process(s), typ, v)
		return nil
	}
}

// WithUser sets the uid and gid of the process and makes /workspace theirs.
func WithUser(uid, gid uint32) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		p := process(s)
		p.User = specs.User{UID: uid, GID: gid}
		for i := range s.Mounts {
			if m := &s.Mounts[i]; m.Destination == Workspace && m.Type == "tmpfs" {
				m.Options = replaceOption(m.Options, "uid=", "uid="+strconv.FormatUint(uint64(uid), 10))
				m.Options = replaceOption(m.Options, "gid=", "gid="+strconv.FormatUint(uint64(gid), 10))
			}
		}
		return nil
	}
}

// WithSeccomp replaces the seccomp profile. A nil profile is refused: boxer
// never runs without one.
func WithSeccomp(p *specs.LinuxSeccomp) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		if p == nil || len(p.Syscalls) == 0 {
			return fmt.Errorf("refusing to run without a seccomp profile")
		}
		linux(s).Seccomp = p
		return nil
	}
}

// WithReadonlyBind appends a read-only, nosuid, nodev bind mount of the host
// path source at destination.
func WithReadonlyBind(source, destination string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Mounts = append(s.Mounts, specs.Mount{
			Destination: destination,
			Type:        "bind",
			Source:      source,
			Options:     []string{"rbind", "ro", "nosuid", "nodev"},
		})
		return nil
	}
}

// WithWorkspaceBind replaces the /workspace tmpfs with a bind mount of the
// host directory source (itself a size-limited tmpfs the caller mounted).
func WithWorkspaceBind(source string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		for i := range s.Mounts {
			if s.Mounts[i].Destination == Workspace {
				s.Mounts[i] = specs.Mount{
					Destination: Workspace,
					Type:        "bind",
					Source:      source,
					Options:     []string{"rbind", "rw", "nosuid", "nodev"},
				}
				return nil
			}
		}
		return fmt.Errorf("no %s mount to replace", Workspace)
	}
}

// WithWritableBind replaces the mount at destination (such as the /tmp
// tmpfs), or appends one, with a writable, nosuid, nodev bind mount of
// the host directory source.
func WithWritableBind(source, destination string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		m := specs.Mount{Destination: destination, Type: "bind", Source: source, Options: []string{"rbind", "rw", "nosuid", "nodev"}}
		for i := range s.Mounts {
			if s.Mounts[i].Destination == destination {
				s.Mounts[i] = m
				return nil
			}
		}
		s.Mounts = append(s.Mounts, m)
		return nil
	}
}

// WithCgroupsPath sets the cgroup path of the container.
func WithCgroupsPath(path string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		linux(s).CgroupsPath = path
		return nil
	}
}

// WithProcess replaces the process's argv, environment and working directory,
// keeping its user, capabilities and limits.
func WithProcess(args, env []string, cwd string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		if len(args) == 0 {
			return fmt.Errorf("no command to run")
		}
		p := process(s)
		p.Args = args
		p.Env = env
		if cwd != "" {
			p.Cwd = cwd
		}
		return nil
	}
}

// WithInit makes boxer-init, which the caller puts at InitPath, the
// sandbox's PID 1: it runs the process's argv as its only child
// (InitArgs). Apply it after WithProcess.
func WithInit(gate bool) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		p := process(s)
		if len(p.Args) == 0 {
			return fmt.Errorf("no command for the init to run")
		}
		p.Args = InitArgs(p.Args, gate)
		return nil
	}
}

// InitArgs is the argv of boxer-init running args; gated, it waits for a
// line on stdin first (a sandbox made before its request).
func InitArgs(args []string, gate bool) []string {
	out := []string{InitPath}
	if gate {
		out = append(out, "-g")
	}
	return append(append(out, "--"), args...)
}

func process(s *specs.Spec) *specs.Process {
	if s.Process == nil {
		s.Process = &specs.Process{}
	}
	return s.Process
}

func linux(s *specs.Spec) *specs.Linux {
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	return s.Linux
}

func resources(s *specs.Spec) *specs.LinuxResources {
	l := linux(s)
	if l.Resources == nil {
		l.Resources = &specs.LinuxResources{}
	}
	return l.Resources
}

func setRlimit(p *specs.Process, typ string, v uint64) {
	for i := range p.Rlimits {
		if p.Rlimits[i].Type == typ {
			p.Rlimits[i].Hard, p.Rlimits[i].Soft = v, v
			return
		}
	}
	p.Rlimits = append(p.Rlimits, specs.POSIXRlimit{Type: typ, Hard: v, Soft: v})
}

// replaceOption replaces the option starting with prefix, or appends it.
func replaceOption(opts []string, prefix, value string) []string {
	out := make([]string, 0, len(opts)+1)
	for _, o := range opts {
		if len(o) >= len(prefix) && o[:len(prefix)] == prefix {
			continue
		}
		out = append(out, o)
	}
	return append(out, value)
}

func intPtr(v int) *int       { return &v }
func int64Ptr(v int64) *int64 { return &v }

// WithNetworkNamespace joins the network namespace bound at path (made by
// boxer, holding the sandbox's link) instead of a fresh empty one.
func WithNetworkNamespace(path string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		for i, ns := range s.Linux.Namespaces {
			if ns.Type == specs.NetworkNamespace {
				s.Linux.Namespaces[i].Path = path
				return nil
			}
		}
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: path})
		return nil
	}
}

// WithTmpfs mounts a size-limited tmpfs owned by uid:gid at destination,
// which must exist in the image (the root is read-only).
func WithTmpfs(destination string, size int64, uid, gid uint32) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Mounts = append(s.Mounts, specs.Mount{
			Destination: destination,
			Type:        "tmpfs",
			Source:      "tmpfs",
			Options: []string{"nosuid", "nodev", "mode=0755", "size=" + strconv.FormatInt(size, 10),
				"uid=" + strconv.FormatUint(uint64(uid), 10), "gid=" + strconv.FormatUint(uint64(gid), 10)},
		})
		return nil
	}
}

// WithUserNamespace joins the user namespace bound at path (made by boxer,
// owned by host id base) that maps ids 0 to size-1 onto base onwards. The
// maps are written too, as the namespace's own: containerd reads them to
// let the mapped root into the task's bundle, and runc checks that they
// match the namespace.
func WithUserNamespace(path string, base, size uint32) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		l := linux(s)
		l.Namespaces = append(l.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace, Path: path})
		m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: base, Size: size}}
		l.UIDMappings, l.GIDMappings = m, slices.Clone(m)
		return nil
	}
}

// WithoutRlimits removes the process's rlimits: it inherits the runtime's,
// which a wrapper around the runtime sets.
func WithoutRlimits(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
	process(s).Rlimits = nil
	return nil
}

// WithRootPath replaces the root's path (the bundle's rootfs, which the
// shim mounts) with path, a read-only root boxer mounted itself.
func WithRootPath(path string) SpecOpts {
	return func(_ context.Context, _ coci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Root = &specs.Root{Path: path, Readonly: true}
		return nil
	}
}
