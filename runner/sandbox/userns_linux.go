package sandbox

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
	"github.com/boxer-dev/boxer/userns"
)

// UsernsSetup is how runc sandboxes get user namespaces of their own, or,
// only when the operator says so, none (the host's).
type UsernsSetup struct {
	// InHost: sandboxes run in the host's user namespace (--userns=host).
	InHost bool
	// Opts are where the blocks' leases are and the range they come from.
	Opts userns.Options
	// views are the lookups of the layers of the images' shared views,
	// by key (see viewLookup).
	views *sync.Map
}

// NewUsernsSetup checks the operator's user namespace settings.
func NewUsernsSetup(o UsernsOptions) (UsernsSetup, error) {
	if o.Dir == "" {
		o.Dir = userns.LeaseDir
	}
	// The leases are known either way: a Runner that gives sandboxes
	// none still returns the blocks of those it removes (a standby's, a
	// leftover of another boxer's).
	if o.Host {
		return UsernsSetup{InHost: true, Opts: userns.Options{Dir: o.Dir}, views: &sync.Map{}}, nil
	}
	if o.Range == "" {
		o.Range = userns.DefaultRange
	}
	rng, err := userns.ParseRange(o.Range)
	if err != nil {
		return UsernsSetup{}, err
	}
	return UsernsSetup{Opts: userns.Options{Dir: o.Dir, Range: rng}, views: &sync.Map{}}, nil
}

// UseHolders makes the sandboxes' namespaces with boxer-wrap, where it is
// installed, in place of util-linux's unshare and a shell: two programs'
// starts less per sandbox (userns.Options.Hold).
func (r *Host) UseHolders() {
	if r.Userns.InHost || r.Wrap == "" {
		return
	}
	for _, h := range []struct {
		name, namespaces string
		field            *string
	}{{"userns-hold", "user", &r.Userns.Opts.Hold}, {"userns-hold-net", "user,net", &r.Userns.Opts.HoldNet}} {
		content, ok := WrapFile(r.Wrap, "the maker of a sandbox's user namespace (boxer's userns package).", "unshare "+h.namespaces, "hold ready")
		if !ok {
			return
		}
		p, err := WriteScript(filepath.Join(r.StateDir, h.name), content)
		if err != nil {
			return
		}
		*h.field = p
	}
	r.Userns.Opts.Wrap = r.Wrap
}

// UsernsFile is where a run directory's user namespace is bound.
func UsernsFile(runDir string) string { return filepath.Join(runDir, "userns") }

// HostIDsOf are the host's uid and gid of uid:gid in the sandbox whose run
// directory is runDir, made by this process or another (a session's, a
// standby's): its namespace's owner is its block's first id.
func HostIDsOf(runDir string, uid, gid uint32) (uint32, uint32, error) {
	base, ok, err := UsernsBase(runDir)
	if err != nil || !ok {
		return uid, gid, err
	}
	return base + uid, base + gid, nil
}

// UsernsBase reads the first host id of the block of the sandbox whose run
// directory is runDir; ok is false for a sandbox in the host's namespace.
func UsernsBase(runDir string) (base uint32, ok bool, err error) {
	base, err = userns.Owner(UsernsFile(runDir))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading the sandbox's user namespace: %w", err)
	}
	return base, true, nil
}

// ReleaseUserns returns the block of the sandbox whose run directory is
// runDir (gone, with its namespace's bind mount, and its processes),
// whoever made it and whatever this Runner's setting.
func (r *Host) ReleaseUserns(runDir string) error {
	return userns.Release(r.Userns.Opts.Dir, runDir)
}

// CheckBundlesWalkable: a sandbox's root in its user namespace, a host id
// of its own, walks down to its task's bundle, so every directory above
// the bundles must let others search it (as /run does). boxer's own state
// directory (state), and what is under it, is made so (an older boxer, or
// a lease taken first, made it 0700; search alone opens nothing in it:
// what it holds keeps its own modes); any other is said at once, not as
// runc's "permission denied" on the first run.
func (r *Host) CheckBundlesWalkable(state string) error {
	if r.Userns.InHost || r.BundlesDir == "" {
		return nil
	}
	for d := filepath.Dir(r.BundlesDir); ; d = filepath.Dir(d) {
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

// SweepUserns returns the blocks of ids of sandboxes whose run directory
// is gone (the reaper's last step, sweep).
func (r *Host) SweepUserns(ctx context.Context) {
	if err := userns.Sweep(r.Userns.Opts.Dir); err != nil {
		log.G(ctx).WithError(err).Warn("sweeping user id blocks")
	}
}
