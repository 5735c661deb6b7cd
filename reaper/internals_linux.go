package reaper

// This file is everything boxer's cleanup knows of containerd's and runc's
// internals, each mirroring the upstream source named beside it. Nothing
// else in boxer parses a shim's command line, speaks the shim's protocol or
// looks into containerd's or runc's directories.

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
	shimapi "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

const (
	// RuncRoot is where containerd's runc shim keeps runc's (and runsc's)
	// state, one directory per namespace: the shim's default root
	// (containerd cmd/containerd-shim-runc-v2/process/init.go, RuncRoot),
	// which boxer never changes.
	RuncRoot = "/run/containerd/runc"
	// TaskBundles is containerd's directory of task bundles under its state
	// directory (core/runtime/v2/manager.go: the v2 task plugin's ID).
	TaskBundles = "io.containerd.runtime.v2.task"

	// sweepQuiet is how long the host must show nothing of the swept
	// sandboxes before the sweep ends: a create in flight when their boxer
	// died can still be making what the sweep looks for.
	sweepQuiet = time.Second
	// sweepInterval spaces the sweep's looks at the host.
	sweepInterval = 100 * time.Millisecond
)

// shimScript is containerd's runc shim without one redundant step. After
// every task delete, containerd 2.x runs "<shim> delete" once the shim's
// connection closes (core/runtime/v2/shim.go, cleanupAfterDeadShim →
// binary.go, Delete), and the shim runs "runc delete --force" a second time
// (pkg/shim/shim.go, action "delete" → Manager.Stop): two program starts,
// about 40 ms here, on every sandbox's path. When runc has no state left for
// the container and its rootfs is not mounted, that cleanup has nothing to
// do, and the script answers at once with what the shim would print: a
// task.v3 DeleteResponse, marshalled below, with exit status 255, which is
// what containerd assumes when it learns nothing (it uses the answer only if
// the task's own delete failed). Everything else — a shim that died with its
// container still there, start, -info — goes to the real shim.
const shimScript = `#!/bin/sh
# Written by boxer: containerd's runc shim, without the second "runc delete"
# containerd 2.x runs after each task is deleted (see boxer's reaper package).
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
		printf '%s'
		exit 0
	fi
fi
exec "$shim" "$@"
`

// ShimScript returns the wrapper script of the runc shim at real (see
// shimScript), which containerd takes as a runtime by its path.
func ShimScript(real string) string {
	return fmt.Sprintf(shimScript, shellQuote(real), shellQuote(RuncRoot), printfOctal(nothingDeleted()))
}

// ShimWrap returns the directives of the runc shim's wrapper at real for
// boxer-wrap (init/boxer-wrap.c): what shimScript does, without a shell.
func ShimWrap(real string) []string {
	return []string{
		"delete-root " + RuncRoot,
		fmt.Sprintf("delete-answer %x", nothingDeleted()),
		"exec " + real,
	}
}

// nothingDeleted is the shim's answer to "delete" when there was nothing to
// delete: exit status 255, no pid, no exit time.
func nothingDeleted() []byte {
	data, err := proto.Marshal(&shimapi.DeleteResponse{ExitStatus: 255})
	if err != nil {
		panic(fmt.Sprintf("marshalling a constant DeleteResponse: %v", err))
	}
	return data
}

// printfOctal writes data as printf(1) octal escapes.
func printfOctal(data []byte) string {
	var b strings.Builder
	for _, c := range data {
		fmt.Fprintf(&b, `\%03o`, c)
	}
	return b.String()
}

// shellQuote quotes s for sh: single quotes, and each ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// containerd 2.x can lose a sandbox whose task creation was cut short by
// its client's death (a boxer killed with SIGKILL while it was creating
// one, which a server filling its warm pool always is): containerd's
// cleanup of the cancelled create races the shim's own create, and the
// shim, its runc (or runsc) container, the rootfs mount or the cgroups stay
// on the host with no task left in containerd to delete. After the reaper
// removes a dead boxer's sandboxes, it sweeps what is left of them.

// sweep removes, for each sandbox ID (their containers gone already),
// whatever containerd lost of them, until the host has shown nothing of
// them for sweepQuiet, or ctx ends.
func (cfg Config) sweep(ctx context.Context, ids []string) {
	quiet := time.Now()
	for {
		procs := processesNaming(ids)
		for _, id := range ids {
			if cfg.sweepOne(ctx, id, procs[id]) {
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
func (cfg Config) sweepOne(ctx context.Context, id string, procs []process) bool {
	shimBin := cfg.Shim
	var sandboxProcs []process
	var dirs []string
	if cfg.Bundles != "" {
		dirs = append(dirs, filepath.Join(cfg.Bundles, cfg.Namespace, id))
	}
	for _, p := range procs {
		switch {
		case p.servesShim(cfg.Address, cfg.Namespace, id):
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
		if err := cfg.removeBundle(ctx, id, b, shimBin); err != nil {
			log.G(ctx).WithError(err).Warnf("sandbox %s: removing its bundle", id)
		}
	}
	if cfg.removeRuntimeState(ctx, id) {
		found, left = true, true
	}
	if !left {
		// runsc delete ends gVisor's processes; with nothing for it to
		// delete, they are ended here.
		for _, p := range sandboxProcs {
			_ = unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	cg := CgroupsPath(cfg.Namespace, id)
	if cgroups.Exists(cfg.Cgroups, cg) {
		found = true
		cgroups.Kill(cfg.Cgroups, cg)
		_ = cgroups.Remove(cfg.Cgroups, cg)
	}
	return found
}

// removeBundle does for a lost task's bundle what containerd does for a
// dead shim's (core/runtime/v2/binary.go, Delete): the shim's "delete"
// (runc or runsc delete --force, rootfs unmounted), then the bundle and its
// work directory go (core/runtime/v2/bundle.go, Delete).
func (cfg Config) removeBundle(ctx context.Context, id, bundle, shimBin string) error {
	if shimBin != "" {
		cctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
		cmd := exec.CommandContext(cctx, shimBin, "-namespace", cfg.Namespace, "-address", cfg.Address, "-id", id, "-bundle", bundle, "delete")
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
// gone), and says whether it was. runc keeps a directory named by the ID
// (libcontainer/factory_linux.go); runsc keeps "<sandbox>_sandbox:<id>.state"
// and a ".lock" beside it (runsc/container/state_file.go), and a create cut
// short can leave just the lock and its sandbox's control socket
// (runsc-<id>.sock), which runsc never removes without a state.
func (cfg Config) removeRuntimeState(ctx context.Context, id string) bool {
	root := filepath.Join(RuncRoot, cfg.Namespace)
	var bin string
	if _, err := os.Stat(filepath.Join(root, id)); err == nil {
		bin = cfg.Runc
	} else if m, _ := filepath.Glob(filepath.Join(root, "*_sandbox:"+id+".state")); len(m) > 0 {
		bin = filepath.Join(cfg.State, "runsc") // the wrapper, with boxer's flags
	} else {
		left := runscDebris(root, id)
		for _, l := range left {
			_ = os.Remove(l)
		}
		return len(left) > 0
	}
	cctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
	defer cancel()
	if out, err := exec.CommandContext(cctx, bin, "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
		log.G(ctx).WithError(err).Debugf("sandbox %s: %s delete: %s", id, bin, bytes.TrimSpace(out))
	}
	return true
}

// runscDebris returns what runsc left in root of container id when it
// has no state file (see removeRuntimeState): the lock, and the control
// socket of its sandbox.
func runscDebris(root, id string) []string {
	if m, _ := filepath.Glob(filepath.Join(root, "*_sandbox:"+id+".state")); len(m) > 0 {
		return nil
	}
	left, _ := filepath.Glob(filepath.Join(root, "*_sandbox:"+id+".lock"))
	if sock := filepath.Join(root, "runsc-"+id+".sock"); exists(sock) {
		left = append(left, sock)
	}
	return left
}

// runscDebrisIDs returns the IDs of the containers runsc left debris of
// in root (runscDebris), whose files are older than age.
func runscDebrisIDs(root string, age time.Duration) []string {
	entries, _ := os.ReadDir(root)
	var ids []string
	seen := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		var id string
		if rest, ok := strings.CutSuffix(name, ".lock"); ok {
			_, id, _ = strings.Cut(rest, "_sandbox:")
		} else if rest, ok := strings.CutPrefix(name, "runsc-"); ok {
			id, _ = strings.CutSuffix(rest, ".sock")
		}
		if id == "" || seen[id] {
			continue
		}
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < age {
			continue
		}
		if len(runscDebris(root, id)) > 0 {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// runscStateIDs returns the IDs of boxer's containers (named bx...) with
// a runsc state file in root ("<sandbox>_sandbox:<id>.state") older than
// age.
func runscStateIDs(root string, age time.Duration) []string {
	entries, _ := os.ReadDir(root)
	var ids []string
	for _, e := range entries {
		rest, ok := strings.CutSuffix(e.Name(), ".state")
		_, id, found := strings.Cut(rest, "_sandbox:")
		if !ok || !found || !strings.HasPrefix(id, "bx") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) >= age {
			ids = append(ids, id)
		}
	}
	return ids
}

// reapRunscDebris removes what runsc left of boxer's containers that are
// gone: a whole state, or a lock and a control socket with no state file
// beside them, which runsc itself never removes. They are seen after a
// server's gVisor sandboxes made ahead are removed as it stops (a few per
// bench run), not only after a boxer's death, so each pass looks for
// them, leaving alone the files of a container that exists and any
// younger than debrisAge.
func (cfg Config) reapRunscDebris(ctx context.Context) {
	root := filepath.Join(RuncRoot, cfg.Namespace)
	// A whole state of a container containerd no longer has: a create
	// that finished after its sandbox was reaped (seen when a server was
	// killed as it filled a gVisor warm pool, at a load of 17). Swept as
	// a lost sandbox is: runsc delete, then its processes.
	var lost []string
	for _, id := range runscStateIDs(root, debrisAge) {
		if _, err := cfg.Client.LoadContainer(ctx, id); errdefs.IsNotFound(err) {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		log.G(ctx).Debugf("sandboxes %s: runsc states with no container, swept", strings.Join(lost, " "))
		cfg.sweep(ctx, lost)
	}
	for _, id := range runscDebrisIDs(root, debrisAge) {
		if !strings.HasPrefix(id, "bx") {
			continue
		}
		if _, err := cfg.Client.LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
			continue
		}
		for _, f := range runscDebris(root, id) {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				log.G(ctx).WithError(err).Debugf("removing %s", f)
			}
		}
	}
}

// debrisAge is how old runsc's lone files must be before a pass removes
// them: older than any create under way.
const debrisAge = time.Minute

// isTaskBundle says whether dir is a containerd task directory of id
// (.../io.containerd.runtime.v2.task/<namespace>/<id>): nothing else is
// ever removed as one.
func isTaskBundle(dir, id string) bool {
	return filepath.IsAbs(dir) && filepath.Base(dir) == id && filepath.Base(filepath.Dir(filepath.Dir(dir))) == TaskBundles
}

// process is a running process and its arguments.
type process struct {
	pid  int
	args []string
}

// servesShim says whether p is a shim's long-running server for sandbox id
// of containerd at address, not its "start" or "delete": the shim's flags
// as containerd passes them (core/runtime/v2/shim_load.go and binary.go;
// pkg/shim/shim.go parses -namespace, -id, -address and the action last).
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

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
