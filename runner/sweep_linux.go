package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// containerd 2.x can lose a sandbox whose task creation was cut short by
// its client's death (a boxer killed with SIGKILL while it was creating
// one, which a server filling its warm pool always is): containerd's
// cleanup of the cancelled create races the shim's own create, and the
// shim, its runc (or runsc) container, the rootfs mount or the cgroups stay
// on the host with no task left in containerd to delete. After the reaper
// removes a dead boxer's sandboxes, it sweeps what is left of them.

const (
	// sweepQuiet is how long the host must show nothing of the swept
	// sandboxes before the sweep ends: a create in flight when their boxer
	// died can still be making what the sweep looks for.
	sweepQuiet = time.Second
	// sweepInterval spaces the sweep's looks at the host.
	sweepInterval = 100 * time.Millisecond
	// taskBundles is containerd's directory of task bundles, under its
	// state directory.
	taskBundles = "io.containerd.runtime.v2.task"
)

// sweep removes, for each sandbox ID (their containers gone already),
// whatever containerd lost of them, until the host has shown nothing of
// them for sweepQuiet, or ctx ends.
func (r *Runner) sweep(ctx context.Context, ids []string) {
	quiet := time.Now()
	for {
		procs := processesNaming(ids)
		for _, id := range ids {
			if r.sweepOne(ctx, id, procs[id]) {
				quiet = time.Now()
			}
		}
		if time.Since(quiet) >= sweepQuiet {
			return
		}
		select {
		case <-ctx.Done():
			log.G(ctx).Warnf("sandboxes %s: stopped removing what containerd left of them: %v", strings.Join(ids, " "), ctx.Err())
			return
		case <-time.After(sweepInterval):
		}
	}
}

// sweepOne removes what is left of sandbox id and says whether it found
// anything. procs are the processes whose command line names it: a shim
// serving it, now lost to containerd, is ended, and so are gVisor's
// processes once nothing else is left; any other (a runtime command or a
// shim's "delete" still at work) is waited for.
func (r *Runner) sweepOne(ctx context.Context, id string, procs []process) bool {
	shimBin := r.realShim
	var sandboxProcs []process
	var dirs []string
	if r.bundlesDir != "" {
		dirs = append(dirs, filepath.Join(r.bundlesDir, r.namespace, id))
	}
	for _, p := range procs {
		switch {
		case p.servesShim(r.address, r.namespace, id):
			if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.pid)); err == nil {
				dirs = append(dirs, cwd)
			}
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.pid)); err == nil {
				shimBin = exe
			}
			log.G(ctx).Debugf("sandbox %s: ending shim %d, lost to containerd", id, p.pid)
			_ = unix.Kill(p.pid, unix.SIGKILL)
		case strings.HasPrefix(filepath.Base(p.args[0]), "runsc-"):
			sandboxProcs = append(sandboxProcs, p)
		default:
			return true
		}
	}
	found := len(procs) > 0
	left := false
	for _, b := range dirs {
		if _, err := os.Stat(b); err != nil || !isTaskBundle(b, id) {
			continue
		}
		found, left = true, true
		if err := r.removeBundle(ctx, id, b, shimBin); err != nil {
			log.G(ctx).WithError(err).Warnf("sandbox %s: removing its bundle", id)
		}
	}
	if r.removeRuntimeState(ctx, id) {
		found, left = true, true
	}
	if !left {
		// runsc delete ends gVisor's processes; with nothing for it to
		// delete, they are ended here.
		for _, p := range sandboxProcs {
			_ = unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	cg := cgroupsPath(r.namespace, id)
	if cgroups.Exists(r.cgroups, cg) {
		found = true
		cgroups.Kill(r.cgroups, cg)
		_ = cgroups.Remove(r.cgroups, cg)
	}
	return found
}

// removeBundle does for a lost task's bundle what containerd does for a
// dead shim's: the shim's "delete" (runc or runsc delete --force, rootfs
// unmounted), then the bundle and its work directory go.
func (r *Runner) removeBundle(ctx context.Context, id, bundle, shimBin string) error {
	if shimBin != "" {
		cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
		cmd := exec.CommandContext(cctx, shimBin, "-namespace", r.namespace, "-address", r.address, "-id", id, "-bundle", bundle, "delete")
		cmd.Dir = bundle
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			log.G(ctx).WithError(err).Debugf("sandbox %s: shim delete: %s", id, bytes.TrimSpace(out))
		}
	}
	rootfs := filepath.Join(bundle, "rootfs")
	if err := unix.Rmdir(rootfs); errors.Is(err, unix.EBUSY) {
		if err := unix.Unmount(rootfs, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", rootfs, err)
		}
	}
	work, werr := os.Readlink(filepath.Join(bundle, "work"))
	if err := os.RemoveAll(bundle); err != nil {
		return err
	}
	if werr == nil && isTaskBundle(work, id) {
		return os.RemoveAll(work)
	}
	return nil
}

// removeRuntimeState deletes runc's or runsc's state for id in the runc
// shim's root, if it is there (a create that finished after its shim was
// gone), and says whether it was. A runsc create cut short can leave just
// its lock file, which runsc never removes without a state beside it.
func (r *Runner) removeRuntimeState(ctx context.Context, id string) bool {
	root := filepath.Join(runcRoot, r.namespace)
	var bin string
	if _, err := os.Stat(filepath.Join(root, id)); err == nil {
		bin = "runc"
	} else if m, _ := filepath.Glob(filepath.Join(root, "*_sandbox:"+id+".state")); len(m) > 0 {
		bin = filepath.Join(r.stateDir, "runsc") // the wrapper, with boxer's flags
	} else {
		locks, _ := filepath.Glob(filepath.Join(root, "*_sandbox:"+id+".lock"))
		for _, l := range locks {
			_ = os.Remove(l)
		}
		return len(locks) > 0
	}
	cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if out, err := exec.CommandContext(cctx, bin, "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
		log.G(ctx).WithError(err).Debugf("sandbox %s: %s delete: %s", id, bin, bytes.TrimSpace(out))
	}
	return true
}

// isTaskBundle says whether dir is a containerd task directory of id
// (.../io.containerd.runtime.v2.task/<namespace>/<id>): nothing else is
// ever removed as one.
func isTaskBundle(dir, id string) bool {
	return filepath.IsAbs(dir) && filepath.Base(dir) == id && filepath.Base(filepath.Dir(filepath.Dir(dir))) == taskBundles
}

// process is a running process and its arguments.
type process struct {
	pid  int
	args []string
}

// servesShim says whether p is a shim's long-running server for sandbox id
// of containerd at address (not its "start" or "delete").
func (p process) servesShim(address, namespace, id string) bool {
	if len(p.args) == 0 || !strings.HasPrefix(filepath.Base(p.args[0]), "containerd-shim") {
		return false
	}
	if last := p.args[len(p.args)-1]; last == "start" || last == "delete" {
		return false
	}
	return flagValue(p.args, "-id") == id && flagValue(p.args, "-namespace") == namespace && flagValue(p.args, "-address") == address
}

func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// processesNaming lists, for each ID, the processes (other than this one)
// with the ID in their command line.
func processesNaming(ids []string) map[string][]process {
	out := map[string][]process{}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		for _, id := range ids {
			if bytes.Contains(data, []byte(id)) {
				args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
				out[id] = append(out[id], process{pid: pid, args: args})
			}
		}
	}
	return out
}
