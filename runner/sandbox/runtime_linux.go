package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	runcoptions "github.com/containerd/containerd/api/types/runc/options"
)

// RunscFlags returns the flags every runsc sandbox gets: the ptrace
// platform (it works wherever runsc does; KVM needs /dev/kvm and hangs on
// some hosts), no network at all (not even gVisor's own netstack to the
// host: loopback only), the OCI seccomp profile applied inside the sandbox,
// which gVisor otherwise ignores, and a fresh empty network namespace for
// each gofer: by default runsc pins one shared namespace with a bind mount
// at <root>/null-netns that outlives every sandbox.
func RunscFlags() []string {
	return []string{"--platform=ptrace", "--network=none", "--oci-seccomp", "--gofer-network-namespace=new"}
}

// RunscFlagRootWritten is the runsc flag of a sandbox whose root is to
// keep what it writes (a build step's): no overlay of gVisor's own over
// the root, whose upper layer lives in the sandbox's memory (or a file of
// its own) and goes with it, so the Sentry's writes reach the host's
// directory through the gofer.
const RunscFlagRootWritten = "--overlay2=none"

// runscNetstackFlags are RunscFlags for a sandbox with egress or a
// session: gVisor's netstack is attached to the sandbox's own network
// namespace (--network=sandbox). With egress it drives the sandbox's eth0,
// and the policy is enforced on the host end, which every frame it writes
// must cross; a session without egress has loopback only, as with
// --network=none, but runsc forwards a port to it only in this mode
// ("unsupported network type none" otherwise: see session_port_linux.go).
func runscNetstackFlags() []string {
	flags := RunscFlags()
	for i, f := range flags {
		if f == "--network=none" {
			flags[i] = "--network=sandbox"
		}
	}
	return flags
}

// Runtime returns the containerd shim and its options for a runtime name.
// runsc runs under containerd's runc shim, as Docker runs it: the shim calls
// a wrapper that adds RunscFlags (runscNetstackFlags for netstack) to
// every runsc command. runc in a user
// namespace of boxer's runs through a wrapper that sets its rlimits (see
// runcUsernsWrapper). extra are more runsc flags for this sandbox alone
// (a build step's --overlay2=none: see Sandbox.RunscFlags).
func (r *Host) Runtime(name string, netstack, userns bool, extra ...string) (string, any, error) {
	if r.ShimContent != "" {
		// Another boxer on this state directory (another build, its
		// boxer-wrap elsewhere) may have written it since: each sandbox
		// gets the wrapper this process knows to work, as the runsc and
		// runc wrappers below do.
		if _, err := WriteScript(r.Shim, r.ShimContent); err != nil {
			return "", nil, err
		}
	}
	switch name {
	case "runc":
		if userns {
			wrapper, err := r.runcUsernsWrapper()
			if err != nil {
				return "", nil, err
			}
			return r.Shim, &runcoptions.Options{BinaryName: wrapper}, nil
		}
		return r.Shim, nil, nil
	case "runsc":
		bin, err := RunscBinary()
		if err != nil {
			return "", nil, err
		}
		wrapper, err := r.RunscWrapper(bin, netstack, extra...)
		if err != nil {
			return "", nil, err
		}
		return r.Shim, &runcoptions.Options{BinaryName: wrapper}, nil
	}
	return "", nil, contract.FieldErr(contract.FieldRuntime, "must be %s, not %q", strings.Join(contract.Runtimes(), " or "), name)
}

// RuncBinary is the runc boxer's private containerd runs: boxer's libexec
// directory's (see daemon), else the one on PATH.
func RuncBinary() string {
	if p, err := daemon.RuntimeBinary("runc"); err == nil {
		return p
	}
	return "runc"
}

// FindInit finds boxer-init (helperBinary); empty when there is none.
func FindInit() string { return HelperBinary(InitName) }

// ShimName is boxer's build of containerd's runc shim
// (cmd/containerd-shim-boxer-v2): the same shim, with the garbage
// collector's target of a shim that many sandboxes share.
const ShimName = "containerd-shim-boxer-v2"

// ShimBinary is the runc shim a private containerd 2.x runs boxer's
// sandboxes with: boxer's build, found as boxer-init is, else the
// daemon's own containerd-shim-runc-v2; empty when there is neither.
// containerd 1.x runs its own: boxer's speaks 2.x's task API.
func ShimBinary(d daemon.Config, v2 bool) string {
	if p := HelperBinary(ShimName); v2 && p != "" {
		return p
	}
	p, _ := d.RuncShimPath()
	return p
}

// InitBinary is the boxer-init every sandbox runs as its PID 1, or an
// error saying how to install it.
func InitBinary() (string, error) {
	if p := FindInit(); p != "" {
		return p, nil
	}
	return "", ErrNoInit
}

// LinkInit puts boxer-init (at the host path init) into a sandbox's code
// directory, which the sandbox binds read-only: a hard link, or a copy
// when init is on another file system. Both are root's, 0755.
func LinkInit(init, codeDir string) error {
	if init == "" {
		return ErrNoInit
	}
	return LinkHelper(init, codeDir, path.Base(oci.InitPath))
}

// LinkHelper puts the program at the host path bin into a sandbox's code
// directory as name, as LinkInit does boxer-init.
func LinkHelper(bin, codeDir, name string) error {
	dst := filepath.Join(codeDir, name)
	if err := os.Link(bin, dst); err == nil {
		return nil
	}
	src, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("copying %s: %w", filepath.Base(bin), err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return fmt.Errorf("copying %s: %w", filepath.Base(bin), err)
	}
	_, err = io.Copy(out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying %s: %w", filepath.Base(bin), err)
	}
	return nil
}

// RunscBinary finds runsc: boxer's libexec directory, then PATH. Without
// it, the error says what to do where boxer runs: in a Kubernetes pod (the
// kubelet sets KUBERNETES_SERVICE_HOST in every container), send the
// request to the gVisor pool; on a host, build it.
func RunscBinary() (string, error) {
	p, err := daemon.RuntimeBinary("runsc")
	if err == nil {
		return p, nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return "", errors.New("runtime runsc: this pod's node has no runsc (gVisor): send requests for runsc to the gVisor pool's Service, boxer-runsc, whose nodes are labelled boxer.dev/runsc=true (docs/fleet.md)")
	}
	return "", fmt.Errorf("runtime runsc: this host has no runsc (gVisor): run 'make deps' (builds it into %s)", daemon.LibexecDir)
}

// RunscWrapper writes the script the shim runs as its "runc" binary: one
// for sandboxes without network, one for those with gVisor's netstack on
// their namespace (egress, or a session); each set of extra flags gets a
// wrapper of its own, named after them (runsc-overlay2-none).
func (r *Host) RunscWrapper(bin string, netstack bool, extra ...string) (string, error) {
	name, flags := "runsc", RunscFlags()
	if netstack {
		name, flags = "runsc-netstack", runscNetstackFlags()
	}
	for _, f := range extra {
		name += "-" + strings.Trim(strings.Map(func(c rune) rune {
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
				return c
			}
			return '-'
		}, f), "-")
	}
	flags = append(flags, extra...)
	if r.Wrap != "" {
		directives := make([]string, 0, len(flags)+1)
		for _, f := range flags {
			directives = append(directives, "arg "+f)
		}
		if w, ok := WrapFile(r.Wrap, "runsc with boxer's flags, for containerd's runc shim.", append(directives, "exec "+bin)...); ok {
			return WriteScript(filepath.Join(r.StateDir, name), w)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# Written by boxer: runsc with boxer's flags, for containerd's runc shim.\nexec %s", bin)
	for _, f := range flags {
		fmt.Fprintf(&b, " %s", f)
	}
	b.WriteString(" \"$@\"\n")
	return WriteScript(filepath.Join(r.StateDir, name), b.String())
}

// runcUsernsWrapper writes the script the shim runs as its "runc" binary
// for sandboxes in user namespaces of boxer's: runc with the sandbox's
// rlimits (no core dumps, RLIMIT_NOFILE), which every process it starts
// inherits. runc sets a spec's rlimits with prlimit(2) on its child once
// the child is in the user namespace, which needs CAP_SYS_RESOURCE over a
// namespace whose owner is not root (see userns): a root without it (in
// some containers and VMs) could not start any sandbox. The runc is the
// one the shim would run: the first on its PATH. boxer-wrap does runc's
// start and delete of these sandboxes itself (runc-fast in
// init/boxer-wrap.c): two of the three executions of runc per sandbox.
func (r *Host) runcUsernsWrapper() (string, error) {
	nofile := strconv.FormatUint(r.Facts.NoFile, 10)
	script := "#!/bin/sh\n# Written by boxer: runc with the rlimits of sandboxes in boxer's user namespaces.\nulimit -c 0 && ulimit -n " + nofile + " && exec runc \"$@\"\n"
	if r.Wrap != "" {
		if w, ok := WrapFile(r.Wrap, "runc with the rlimits of sandboxes in boxer's user namespaces.", "rlimit-core 0", "rlimit-nofile "+nofile, "runc-fast start-delete", "exec runc"); ok {
			script = w
		}
	}
	return WriteScript(filepath.Join(r.StateDir, "runc-userns-"+nofile), script)
}

// WriteScript writes an executable script once: atomically, and only when
// its content changed, so that concurrent boxer processes agree.
func WriteScript(path, content string) (string, error) {
	if cur, err := os.ReadFile(path); err == nil && string(cur) == content {
		return path, nil
	}
	if err := reaper.WriteFileAtomic(path, []byte(content), 0o755); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
