package sandbox

// A runc sandbox's root, idmapped for its user namespace.

import (
	"context"
	"fmt"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"

	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/snapshots"
)

// viewLookup is one question to containerd about the layers of an image's
// shared view; done closes when layers or err is set.
type viewLookup struct {
	done   chan struct{}
	layers []string
	err    error
}

// ViewLookup returns the lookup of rootfs's view's layers, started now if
// there is none (fresh: a new one, whatever there is). A view's mounts do
// not change while it exists, so each Runner asks once per view; a failed
// lookup is forgotten, and the next sandbox asks again.
func (r *Host) ViewLookup(ctx context.Context, rootfs snapshots.Rootfs, fresh bool) *viewLookup {
	l := &viewLookup{done: make(chan struct{})}
	if fresh {
		r.Userns.views.Store(rootfs.Key, l)
	} else if v, loaded := r.Userns.views.LoadOrStore(rootfs.Key, l); loaded {
		return v.(*viewLookup)
	}
	// Not the request's context: another sandbox may wait on the answer.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(l.done)
		mounts, err := r.Containerd.SnapshotService(rootfs.Snapshotter).Mounts(ctx, rootfs.Key)
		if err != nil {
			l.err = fmt.Errorf("looking up the root of %s: %w", rootfs.Image, err)
		} else if l.layers, err = layersOf(mounts); err != nil {
			l.err = fmt.Errorf("the root of %s: %w", rootfs.Image, err)
		}
		if l.err != nil {
			r.Userns.views.CompareAndDelete(rootfs.Key, l)
		}
	}()
	return l
}

// ViewLayers waits for the layers of rootfs's view, uppermost first.
func (r *Host) ViewLayers(ctx context.Context, rootfs snapshots.Rootfs, fresh bool) ([]string, error) {
	l := r.ViewLookup(ctx, rootfs, fresh)
	select {
	case <-l.done:
		return l.layers, l.err
	case <-ctx.Done():
		return nil, contract.ErrInterrupted
	}
}

// layersOf reads the layers of a read-only view's mounts: a bind mount of
// its one layer, or an overlay of lower layers only.
func layersOf(mounts []mount.Mount) ([]string, error) {
	if len(mounts) == 1 {
		switch m := mounts[0]; m.Type {
		case "bind":
			return []string{m.Source}, nil
		case "overlay":
			var lower []string
			for _, o := range m.Options {
				if strings.HasPrefix(o, "upperdir=") || strings.HasPrefix(o, "workdir=") {
					return nil, fmt.Errorf("a writable overlay (%s) is not a shared view", o)
				}
				if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
					lower = strings.Split(v, ":")
				}
			}
			if len(lower) > 0 {
				return lower, nil
			}
		}
	}
	return nil, fmt.Errorf("unexpected mounts %v of a shared view", mounts)
}

// WithRootfs points the container at the image's shared read-only view
// without the extra round trip containerd.WithSnapshot makes; or, for a
// sandbox whose root boxer mounted (own), names the image alone (the view
// is in a label): containerd's client then does not look the view up for
// the task (a container read twice, the view's mounts, the spec decoded)
// and the shim mounts nothing that the spec's root does not use.
func WithRootfs(r snapshots.Rootfs, own bool) containerd.NewContainerOpts {
	return func(_ context.Context, _ *containerd.Client, c *containers.Container) error {
		if !own {
			c.Snapshotter = r.Snapshotter
			c.SnapshotKey = r.Key
		}
		c.Image = r.Image
		return nil
	}
}
