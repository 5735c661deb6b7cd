package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containerd/log"

	"github.com/boxer-dev/boxer/fault"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/userns"
)

// usernsSetup is how runc sandboxes get user namespaces of their own, or,
// only when the operator says so, none (the host's).
type usernsSetup struct {
	host bool
	opts userns.Options
	// views are the lookups of the layers of the images' shared views,
	// by key (see viewLookup).
	views *sync.Map
}

// newUsernsSetup checks the operator's user namespace settings.
func newUsernsSetup(o UsernsOptions) (usernsSetup, error) {
	if o.Dir == "" {
		o.Dir = userns.LeaseDir
	}
	// The leases are known either way: a Runner that gives sandboxes
	// none still returns the blocks of those it removes (a standby's, a
	// leftover of another boxer's).
	if o.Host {
		return usernsSetup{host: true, opts: userns.Options{Dir: o.Dir}, views: &sync.Map{}}, nil
	}
	if o.Range == "" {
		o.Range = userns.DefaultRange
	}
	rng, err := userns.ParseRange(o.Range)
	if err != nil {
		return usernsSetup{}, err
	}
	return usernsSetup{opts: userns.Options{Dir: o.Dir, Range: rng}, views: &sync.Map{}}, nil
}

// useHolders makes the sandboxes' namespaces with boxer-wrap, where it is
// installed, in place of util-linux's unshare and a shell: two programs'
// starts less per sandbox (userns.Options.Hold).
func (r *Host) useHolders() {
	if r.userns.host || r.wrap == "" {
		return
	}
	for _, h := range []struct {
		name, namespaces string
		field            *string
	}{{"userns-hold", "user", &r.userns.opts.Hold}, {"userns-hold-net", "user,net", &r.userns.opts.HoldNet}} {
		content, ok := box.WrapFile(r.wrap, "the maker of a sandbox's user namespace (boxer's userns package).", "unshare "+h.namespaces, "hold ready")
		if !ok {
			return
		}
		p, err := writeScript(filepath.Join(r.stateDir, h.name), content)
		if err != nil {
			return
		}
		*h.field = p
	}
	r.userns.opts.Wrap = r.wrap
}

// usernsFile is where a run directory's user namespace is bound.
func usernsFile(runDir string) string { return filepath.Join(runDir, "userns") }

// hostIDsOf are the host's uid and gid of uid:gid in the sandbox whose run
// directory is runDir, made by this process or another (a session's, a
// standby's): its namespace's owner is its block's first id.
func hostIDsOf(runDir string, uid, gid uint32) (uint32, uint32, error) {
	base, ok, err := usernsBase(runDir)
	if err != nil || !ok {
		return uid, gid, err
	}
	return base + uid, base + gid, nil
}

// usernsBase reads the first host id of the block of the sandbox whose run
// directory is runDir; ok is false for a sandbox in the host's namespace.
func usernsBase(runDir string) (base uint32, ok bool, err error) {
	base, err = userns.Owner(usernsFile(runDir))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading the sandbox's user namespace: %w", err)
	}
	return base, true, nil
}

// releaseUserns returns the block of the sandbox whose run directory is
// runDir (gone, with its namespace's bind mount, and its processes),
// whoever made it and whatever this Runner's setting.
func (r *Host) releaseUserns(runDir string) error {
	return userns.Release(r.userns.opts.Dir, runDir)
}

// checkBundlesWalkable: a sandbox's root in its user namespace, a host id
// of its own, walks down to its task's bundle, so every directory above
// the bundles must let others search it (as /run does). boxer's own state
// directory (state), and what is under it, is made so (an older boxer, or
// a lease taken first, made it 0700; search alone opens nothing in it:
// what it holds keeps its own modes); any other is said at once, not as
// runc's "permission denied" on the first run.
func (r *Host) checkBundlesWalkable(state string) error {
	if r.userns.host || r.bundlesDir == "" {
		return nil
	}
	for d := filepath.Dir(r.bundlesDir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil && st.Mode().Perm()&0o001 == 0 && (d == state || strings.HasPrefix(d, state+"/")) {
			err = os.Chmod(d, st.Mode().Perm()|0o011)
			if err == nil {
				continue
			}
		}
		if err == nil && st.Mode().Perm()&0o001 == 0 {
			return &fault.Error{
				What: fmt.Sprintf("%s (mode %04o) is not searchable by other users, and sandboxes in user namespaces of their own must walk through it to their root", d, st.Mode().Perm()),
				Do:   "chmod o+x it (as /run is), move boxer's state (BOXER_STATE) elsewhere, or run boxer with --userns=host",
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// sweepUserns returns the blocks of ids of sandboxes whose run directory
// is gone (the reaper's last step, sweep).
func (r *Host) sweepUserns(ctx context.Context) {
	if err := userns.Sweep(r.userns.opts.Dir); err != nil {
		log.G(ctx).WithError(err).Warn("sweeping user id blocks")
	}
}
