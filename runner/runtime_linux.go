package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/boxer-dev/boxer/daemon"
	runcoptions "github.com/containerd/containerd/api/types/runc/options"
)

// RunscFlags are the flags every runsc sandbox gets: the ptrace platform
// (it works wherever runsc does; KVM needs /dev/kvm and hangs on some
// hosts), no network at all (not even gVisor's own netstack to the host:
// loopback only), and the OCI seccomp profile applied inside the sandbox,
// which gVisor otherwise ignores.
var RunscFlags = []string{"--platform=ptrace", "--network=none", "--oci-seccomp"}

// runscPidsOverhead is room for gVisor's own host threads in the sandbox's
// pids cgroup, on top of two host tasks per sandboxed one (on the ptrace
// platform each sandboxed thread has a host stub). Too little room kills the
// whole sandbox instead of failing the program's fork.
const runscPidsOverhead = 256

// runtime returns the containerd shim and its options for a runtime name.
// runsc runs under containerd's runc shim, as Docker runs it: the shim calls
// a wrapper that adds RunscFlags to every runsc command.
func (r *Runner) runtime(name string) (string, any, error) {
	switch name {
	case "runc":
		return runcShim, nil, nil
	case "runsc":
		bin, err := runscBinary()
		if err != nil {
			return "", nil, err
		}
		wrapper, err := r.runscWrapper(bin)
		if err != nil {
			return "", nil, err
		}
		return runcShim, &runcoptions.Options{BinaryName: wrapper}, nil
	}
	return "", nil, invalid(fmt.Sprintf("--runtime %q: use runc or runsc", name))
}

// runscBinary finds runsc: boxer's libexec directory, then PATH.
func runscBinary() (string, error) {
	if p := filepath.Join(daemon.LibexecDir, "runsc"); isExecutable(p) {
		return p, nil
	}
	p, err := exec.LookPath("runsc")
	if err != nil {
		return "", fmt.Errorf("--runtime runsc: runsc (gVisor) is not installed: run 'apt-get install runsc'")
	}
	return p, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// runscWrapper writes (once, atomically) the script the shim runs as its
// "runc" binary.
func (r *Runner) runscWrapper(bin string) (string, error) {
	path := filepath.Join(r.stateDir, "runsc")
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!/bin/sh\n# Written by boxer: runsc with boxer's flags, for containerd's runc shim.\nexec %s", bin)
	for _, f := range RunscFlags {
		fmt.Fprintf(&b, " %s", f)
	}
	b.WriteString(" \"$@\"\n")
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, b.Bytes()) {
		return path, nil
	}
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	if err := os.WriteFile(tmp, b.Bytes(), 0o755); err != nil {
		return "", fmt.Errorf("writing runsc wrapper: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing runsc wrapper: %w", err)
	}
	return path, nil
}
