package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/seccomp"
	"github.com/boxer-dev/boxer/userns"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// RunscPidsOverhead is room for gVisor's own host threads in the sandbox's
// pids cgroup, on top of runscPidsPerTask host tasks per sandboxed one (on
// the ptrace platform each sandboxed thread has a host stub, and the
// Sentry a thread to trace it, and more while its tasks wait on the host).
// Too little room kills the whole sandbox (the Sentry cannot make a
// thread: exit 2) instead of failing the program's fork: measured with a
// fork bomb at --pids 32, twice the tasks killed the sandbox, four times
// gave the program its EAGAIN. The Sentry keeps the threads it made: a
// bomb after a session's busy hour took 300 of 4 × 33 + 256 in a fresh
// sandbox and killed two sandboxes in three on a loaded host, so the
// overhead is 512.
const (
	RunscPidsOverhead = 512
	RunscPidsPerTask  = 4
)

// HostFacts are what a sandbox's spec takes from the host.
type HostFacts struct {
	// Namespace is containerd's, part of the sandbox's cgroup path.
	Namespace string
	// NoFile is the sandbox's RLIMIT_NOFILE: at most the caller's hard
	// limit (raising a hard limit needs CAP_SYS_RESOURCE).
	NoFile uint64
	// Init is boxer-init on the host, every sandbox's PID 1; empty when
	// it is not installed.
	Init string
}

// ErrNoInit says that boxer-init is missing, and how to get it.
var ErrNoInit = fmt.Errorf("%s (every sandbox's PID 1) is not installed: run 'make deps' (builds it into %s)", InitName, daemon.LibexecDir)

// InitName is boxer-init's file name: beside the boxer binary ('make
// build') or in boxer's libexec directory ('make deps').
const InitName = "boxer-init"

// initPids is what boxer-init takes of a sandbox's pids budget: one
// process of one thread, added to the request's.
const initPids = 1

// Dirs are the host directories a sandbox binds.
type Dirs struct {
	// Code is bound read-only at /code: it holds boxer-init (linkInit)
	// and, with a language, the program's code.
	Code string
	// Workspace, a size-limited tmpfs on the host, is bound at /workspace.
	Workspace string
	// Tmp and Home, a session's, are bound at /tmp and /home (with
	// HOME=/home/user); empty: /tmp is a tmpfs of the sandbox's own, and
	// there is no writable home (see mountSessionFiles).
	Tmp, Home string
	// Net is the sandbox's link out; nil without egress.
	Net *Net
	// Netns, without Net, is a network namespace of the sandbox's own
	// with lo up (a gVisor session's: see makeLoopback); empty: the
	// runtime makes one.
	Netns string
	// Run, a memory-backed directory on the host, is bound read-only at
	// /run when the run has secrets (SecretsDir, TrustBundle).
	Run string
	// SecretEnv are the secrets the program gets as variables too.
	SecretEnv []string
	// Trust: point the program's clients at TrustBundle.
	Trust bool
	// Userns is the sandbox's user namespace; nil: the host's.
	Userns *Userns
	// Root is the sandbox's root boxer mounted (mountRoot); empty: the
	// image's view as the shim mounts it.
	Root string
	// Preload: Code holds the preload hook, which Python imports as it
	// starts and which holds the program itself (preload_linux.go):
	// boxer-init has no gate then.
	Preload bool
}

// Userns is a sandbox's user namespace: bound at Path, mapping ids
// 0-65535 inside onto Base onwards.
type Userns struct {
	Path string
	Base uint32
}

// Net is what a sandbox with egress gets of its link.
type Net struct {
	// Netns is the network namespace it joins; ResolvConf the file bound
	// at /etc/resolv.conf; Env the proxy variables.
	Netns, ResolvConf string
	Env               []string
}

// Limits are the limits the kernel enforces for req on host: the
// request's own, with room for boxer-init in the pids limit, and under
// runsc room for gVisor's threads too, which live in the sandbox's cgroup.
func Limits(req contract.Request, host HostFacts) oci.Limits {
	l := oci.Limits{MemoryBytes: req.MemoryBytes, CPUs: req.CPUs, Pids: req.Pids + initPids, TmpBytes: req.TmpBytes, NoFile: host.NoFile}
	if req.Runtime == "runsc" {
		l.Pids = RunscPidsPerTask*l.Pids + RunscPidsOverhead
	}
	return l
}

// BuildSpec returns the OCI spec of sandbox id for a normalized request,
// the environment of its image's config and the host's facts. Its PID 1
// is boxer-init, which runs the program; a gated sandbox's waits for a
// line on stdin first (a sandbox made before its request).
func BuildSpec(id string, req contract.Request, imageEnv []string, host HostFacts, dirs Dirs, gate bool) (*specs.Spec, error) {
	var presetEnv, netEnv []string
	if dirs.Net != nil {
		netEnv = dirs.Net.Env
	}
	if req.Lang != "" {
		p, err := contract.LookupPreset(req.Lang)
		if err != nil {
			return nil, err
		}
		presetEnv = p.Env
		if dirs.Net != nil {
			netEnv = append(netEnv, p.NetEnv...)
		}
	}
	var trust, home []string
	if dirs.Trust {
		trust = contract.TrustEnv
	}
	if dirs.Home != "" {
		home = []string{"HOME=" + contract.SessionHome}
	}
	args, env := req.Argv(), BuildEnv(imageEnv, presetEnv, home, netEnv, trust, req.Env)
	if len(dirs.SecretEnv) > 0 {
		args = contract.SecretEnvScript(args, dirs.SecretEnv, env)
	}
	if dirs.Preload {
		env, gate = contract.WithPreloadPath(env), false
	}
	if dirs.Code == "" {
		return nil, errors.New("building spec: no code directory for boxer-init")
	}
	profile := req.Seccomp
	switch {
	case profile != nil:
	case req.Runtime == "runsc":
		profile = seccomp.GVisorProfile()
	default:
		profile = seccomp.DefaultProfile()
	}
	opts := []oci.SpecOpts{
		oci.WithHardenedBase,
		oci.WithProcess(args, env, oci.Workspace),
		oci.WithInit(gate),
		oci.WithUser(req.UID, req.GID),
		oci.WithLimits(Limits(req, host)),
		oci.WithCgroupsPath(reaper.CgroupsPath(host.Namespace, id)),
		oci.WithSeccomp(profile),
		oci.WithWorkspaceBind(dirs.Workspace),
	}
	if req.Runtime == "runsc" {
		// The program's own process cap under gVisor, which counts
		// RLIMIT_NPROC per sandbox (its kernel is the sandbox's alone),
		// and boxer-init's.
		opts = append(opts, oci.WithRlimit("RLIMIT_NPROC", uint64(req.Pids+initPids)))
	}
	if dirs.Userns != nil {
		// runc's wrapper sets the rlimits (see runcUsernsWrapper).
		opts = append(opts, oci.WithUserNamespace(dirs.Userns.Path, dirs.Userns.Base, userns.Size), oci.WithoutRlimits)
	}
	if dirs.Root != "" {
		opts = append(opts, oci.WithRootPath(dirs.Root))
	}
	if dirs.Code != "" {
		opts = append(opts, oci.WithReadonlyBind(dirs.Code, oci.CodeDir))
	}
	if dirs.Tmp != "" {
		opts = append(opts, oci.WithWritableBind(dirs.Tmp, "/tmp"))
	}
	if dirs.Home != "" {
		opts = append(opts, oci.WithWritableBind(dirs.Home, path.Dir(contract.SessionHome)))
	}
	if dirs.Run != "" {
		opts = append(opts, oci.WithReadonlyBind(dirs.Run, "/run"))
	}
	if dirs.Netns != "" {
		opts = append(opts, oci.WithNetworkNamespace(dirs.Netns))
	}
	if dirs.Net != nil {
		opts = append(opts, oci.WithNetworkNamespace(dirs.Net.Netns), oci.WithReadonlyBind(dirs.Net.ResolvConf, "/etc/resolv.conf"))
		if p, err := contract.LookupPreset(req.Lang); err == nil && req.ImageName() == p.Image {
			// Where a preset's package manager installs (see NetEnv):
			// memory-backed, as large as /tmp, the sandbox user's. Only
			// boxer's own images are known to hold the mount point.
			opts = append(opts, oci.WithTmpfs(contract.PackagesDir, req.TmpBytes, req.UID, req.GID))
		}
	}
	spec, err := oci.New(context.Background(), id, opts...)
	if err != nil {
		return nil, fmt.Errorf("building spec: %w", err)
	}
	return spec, nil
}

// BuildEnv merges environments, later entries replacing earlier ones by name.
func BuildEnv(layers ...[]string) []string {
	var out []string
	index := map[string]int{}
	for _, layer := range layers {
		for _, kv := range layer {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := index[k]; ok {
				out[i] = kv
				continue
			}
			index[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}
