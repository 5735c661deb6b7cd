package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/boxer-dev/boxer/daemon"
	runcoptions "github.com/containerd/containerd/api/types/runc/options"
)

// RunscFlags are the flags every runsc sandbox gets: the ptrace platform
// (it works wherever runsc does; KVM needs /dev/kvm and hangs on some
// hosts), no network at all (not even gVisor's own netstack to the host:
// loopback only), the OCI seccomp profile applied inside the sandbox,
// which gVisor otherwise ignores, and a fresh empty network namespace for
// each gofer: by default runsc pins one shared namespace with a bind mount
// at <root>/null-netns that outlives every sandbox.
var RunscFlags = []string{"--platform=ptrace", "--network=none", "--oci-seccomp", "--gofer-network-namespace=new"}

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
		return r.shim, nil, nil
	case "runsc":
		bin, err := runscBinary()
		if err != nil {
			return "", nil, err
		}
		wrapper, err := r.runscWrapper(bin)
		if err != nil {
			return "", nil, err
		}
		return r.shim, &runcoptions.Options{BinaryName: wrapper}, nil
	}
	return "", nil, invalid(fmt.Sprintf("--runtime %q: use runc or runsc", name))
}

// runscBinary finds runsc: boxer's libexec directory, then PATH.
func runscBinary() (string, error) {
	p, err := daemon.RuntimeBinary("runsc")
	if err != nil {
		return "", fmt.Errorf("--runtime runsc: runsc (gVisor) is not installed: run 'make deps' (builds it into %s)", daemon.LibexecDir)
	}
	return p, nil
}

// runscWrapper writes the script the shim runs as its "runc" binary.
func (r *Runner) runscWrapper(bin string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# Written by boxer: runsc with boxer's flags, for containerd's runc shim.\nexec %s", bin)
	for _, f := range RunscFlags {
		fmt.Fprintf(&b, " %s", f)
	}
	b.WriteString(" \"$@\"\n")
	return writeScript(filepath.Join(r.stateDir, "runsc"), b.String())
}

// runcRoot is where the runc shim keeps runc's (and runsc's) state, one
// directory per namespace (the shim's default; boxer sets no other).
const runcRoot = "/run/containerd/runc"

// shimScript is containerd's runc shim without one redundant step. After
// every task delete, containerd 2.x runs "<shim> delete" once the shim's
// connection closes, and the shim runs "runc delete --force" a second time:
// two program starts, about 40 ms here, on every sandbox's path. When runc
// has no state left for the container and its rootfs is not mounted, that
// cleanup has nothing to do, and the script answers at once: a DeleteResponse
// with exit status 255, what containerd assumes when it learns nothing (it
// uses the answer only if the task's own delete failed). Everything else —
// a shim that died with its container still there, start, -info — goes to
// the real shim.
const shimScript = `#!/bin/sh
# Written by boxer: containerd's runc shim, without the second "runc delete"
# containerd 2.x runs after each task is deleted (see boxer's runner package).
shim=%s
root=%s
for a; do last=$a; done
if [ "$last" = delete ]; then
	ns= id= prev=
	for a; do
		case $prev in -namespace) ns=$a ;; -id) id=$a ;; esac
		prev=$a
	done
	left=
	case $PWD in *[[:space:]\\]*) left=1 ;; esac
	for f in "$root/$ns/$id" "$root/$ns/"*"$id"*; do [ -e "$f" ] && left=1; done
	if [ -n "$ns" ] && [ -n "$id" ] && [ -z "$left" ] && ! grep -qF " $PWD/rootfs " /proc/self/mountinfo; then
		printf '\020\377\001'
		exit 0
	fi
fi
exec "$shim" "$@"
`

// shimWrapper writes the shimScript for the runc shim at real and returns
// its path, which containerd takes as a runtime.
func (r *Runner) shimWrapper(real string) (string, error) {
	return writeScript(filepath.Join(r.stateDir, "shim"), fmt.Sprintf(shimScript, shellQuote(real), shellQuote(runcRoot)))
}

// shellQuote quotes s for sh: single quotes, and each ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeScript writes an executable script once: atomically, and only when
// its content changed, so that concurrent boxer processes agree.
func writeScript(path, content string) (string, error) {
	if cur, err := os.ReadFile(path); err == nil && string(cur) == content {
		return path, nil
	}
	if err := writeFileAtomic(path, []byte(content), 0o755); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it into place: readers see all of it or none.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
