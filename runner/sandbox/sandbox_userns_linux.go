package sandbox

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
	"github.com/boxer-dev/boxer/snapshots"
	"github.com/boxer-dev/boxer/userns"
)

// wantsUserns says whether the sandbox gets a user namespace of its own:
// on runc, unless the operator runs sandboxes in the host's. gVisor's
// Sentry is a kernel of its own, with its own user namespace and counters.
func (sb *Sandbox) wantsUserns() bool {
	return !sb.h.Userns.InHost && sb.Req.Runtime == "runc"
}

// makeUserns leases the sandbox's block of host ids and makes its user
// namespace, bound in its run directory.
func (sb *Sandbox) makeUserns() error {
	if sb.Req.UID >= userns.Size || sb.Req.GID >= userns.Size {
		return contract.FieldErr(contract.FieldUser, "must be below %d:%d in the sandbox's user namespace, not %d:%d", userns.Size, userns.Size, sb.Req.UID, sb.Req.GID)
	}
	// A sandbox with egress gets its network namespace here, owned by
	// its user namespace (runc could not mount a fresh sysfs in one of
	// the host's); attachLink wires it.
	var netPath string
	if sb.Req.HasEgress() {
		netPath = filepath.Join(sb.RunDir, "netns")
	}
	ns, err := userns.Make(sb.h.Userns.Opts, sb.RunDir, UsernsFile(sb.RunDir), netPath)
	if errors.Is(err, userns.ErrFull) {
		return &fault.Error{What: err.Error(), Do: "wait for sandboxes to end, or give boxer a larger range with --userns-range", Err: err}
	}
	if err != nil {
		return err
	}
	sb.Dirs.Userns = &Userns{Path: ns.Path, Base: ns.Base}
	return nil
}

// HostIDs are the host's uid and gid of the sandbox's user: files boxer
// writes for it are theirs.
func (sb *Sandbox) HostIDs() (uid, gid uint32) {
	if u := sb.Dirs.Userns; u != nil {
		return u.Base + sb.Req.UID, u.Base + sb.Req.GID
	}
	return sb.Req.UID, sb.Req.GID
}

// AdoptUserns takes over the namespace of a sandbox another process made
// (a standby), which must match this Host's setting: a sandbox made in
// the host's namespace never serves a Host that gives each its own.
func (sb *Sandbox) AdoptUserns() error {
	base, ok, err := UsernsBase(sb.RunDir)
	if err != nil {
		return err
	}
	if ok != sb.wantsUserns() {
		return fmt.Errorf("standby %s was made with another user namespace setting", sb.ID)
	}
	if ok {
		sb.Dirs.Userns = &Userns{Path: UsernsFile(sb.RunDir), Base: base}
	}
	return nil
}

// LookUpView starts, unless one is under way or answered, the lookup of
// the layers of rootfs's view, for a sandbox that gets a user namespace of
// its own: containerd's answer (about 1.4 ms on a new process) comes
// while the run directory and the namespace are made.
func (sb *Sandbox) LookUpView(ctx context.Context, rootfs snapshots.Rootfs) {
	if sb.wantsUserns() {
		sb.h.ViewLookup(ctx, rootfs, false)
	}
}

// mountRoot gives a sandbox in a user namespace of its own its root: the
// image's shared read-only view, idmapped through its namespace and
// mounted in its run directory, so that the image's files show their
// owners inside (root's are uid 0, not the overflow id) with no copy. The
// view's layers are shared and unchanged; the mount goes with the run
// directory (reaper.RemoveRunDir), on every teardown, the reaper's too.
// A root the layer above mounted there itself (a build step's writable
// one) is kept.
func (sb *Sandbox) mountRoot(ctx context.Context, rootfs snapshots.Rootfs) error {
	if sb.Dirs.Userns == nil || sb.Dirs.Root != "" {
		return nil
	}
	dir := reaper.RootDir(sb.RunDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("creating root directory: %w", err)
	}
	for fresh := false; ; fresh = true {
		layers, err := sb.h.ViewLayers(ctx, rootfs, fresh)
		if err != nil {
			return err
		}
		err = userns.MountIDMapped(sb.Dirs.Userns.Path, layers, dir)
		if err == nil {
			sb.Dirs.Root = dir
			return nil
		}
		// The view was made anew since its layers were learnt (the image
		// removed and set up again): once more, from containerd.
		if fresh || !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
}
