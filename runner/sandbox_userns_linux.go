package runner

// A sandbox's user namespace and its root's idmapped view, on the Host's
// setups (userns_linux.go, rootfs_idmap_linux.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
	"github.com/boxer-dev/boxer/userns"
)

// wantsUserns says whether the sandbox gets a user namespace of its own:
// on runc, unless the operator runs sandboxes in the host's. gVisor's
// Sentry is a kernel of its own, with its own user namespace and counters.
func (sb *sandbox) wantsUserns() bool {
	return !sb.r.Userns.InHost && sb.req.Runtime == "runc"
}

// makeUserns leases the sandbox's block of host ids and makes its user
// namespace, bound in its run directory.
func (sb *sandbox) makeUserns() error {
	if sb.req.UID >= userns.Size || sb.req.GID >= userns.Size {
		return contract.FieldErr(contract.FieldUser, "must be below %d:%d in the sandbox's user namespace, not %d:%d", userns.Size, userns.Size, sb.req.UID, sb.req.GID)
	}
	// A sandbox with egress gets its network namespace here, owned by
	// its user namespace (runc could not mount a fresh sysfs in one of
	// the host's); attachLink wires it.
	var netPath string
	if sb.req.HasEgress() {
		netPath = filepath.Join(sb.runDir, "netns")
	}
	ns, err := userns.Make(sb.r.Userns.Opts, sb.runDir, box.UsernsFile(sb.runDir), netPath)
	if errors.Is(err, userns.ErrFull) {
		return &fault.Error{What: err.Error(), Do: "wait for sandboxes to end, or give boxer a larger range with --userns-range", Err: err}
	}
	if err != nil {
		return err
	}
	sb.dirs.Userns = &box.Userns{Path: ns.Path, Base: ns.Base}
	return nil
}

// hostIDs are the host's uid and gid of the sandbox's user: files boxer
// writes for it are theirs.
func (sb *sandbox) hostIDs() (uid, gid uint32) {
	if u := sb.dirs.Userns; u != nil {
		return u.Base + sb.req.UID, u.Base + sb.req.GID
	}
	return sb.req.UID, sb.req.GID
}

// adoptUserns takes over the namespace of a sandbox another process made
// (a standby), which must match this Runner's setting: a sandbox made in
// the host's namespace never serves a Runner that gives each its own.
func (sb *sandbox) adoptUserns() error {
	base, ok, err := box.UsernsBase(sb.runDir)
	if err != nil {
		return err
	}
	if ok != sb.wantsUserns() {
		return fmt.Errorf("standby %s was made with another user namespace setting", sb.id)
	}
	if ok {
		sb.dirs.Userns = &box.Userns{Path: box.UsernsFile(sb.runDir), Base: base}
	}
	return nil
}

// lookUpView starts, unless one is under way or answered, the lookup of
// the layers of rootfs's view, for a sandbox that gets a user namespace of
// its own: containerd's answer (about 1.4 ms on a new process) comes
// while the run directory and the namespace are made.
func (sb *sandbox) lookUpView(ctx context.Context, rootfs snapshots.Rootfs) {
	if sb.wantsUserns() {
		sb.r.ViewLookup(ctx, rootfs, false)
	}
}

// mountRoot gives a sandbox in a user namespace of its own its root: the
// image's shared read-only view, idmapped through its namespace and
// mounted in its run directory, so that the image's files show their
// owners inside (root's are uid 0, not the overflow id) with no copy. The
// view's layers are shared and unchanged; the mount goes with the run
// directory (reaper.RemoveRunDir), on every teardown, the reaper's too.
func (sb *sandbox) mountRoot(ctx context.Context, rootfs snapshots.Rootfs) error {
	if sb.dirs.Userns == nil {
		return nil
	}
	dir := reaper.RootDir(sb.runDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("creating root directory: %w", err)
	}
	for fresh := false; ; fresh = true {
		layers, err := sb.r.ViewLayers(ctx, rootfs, fresh)
		if err != nil {
			return err
		}
		err = userns.MountIDMapped(sb.dirs.Userns.Path, layers, dir)
		if err == nil {
			sb.dirs.Root = dir
			return nil
		}
		// The view was made anew since its layers were learnt (the image
		// removed and set up again): once more, from containerd.
		if fresh || !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
}
