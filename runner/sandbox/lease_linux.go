package sandbox

// This file gives a long-lived Runner's containers one lease.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// containerLease is the lease a Runner's containers are made under from
// its second on. Without one, containerd's client makes and removes a
// lease around each NewContainer: two writes of containerd's database,
// each synced to disk, and a garbage collection scheduled. No container
// of boxer's needs it: none of their options makes a snapshot or content
// for a lease to hold. A CLI run makes one container and no lease. The
// lease of a Runner that died is reaped (reaper.ContainerLeasePrefix), or
// expires.
type containerLease struct {
	made atomic.Int32
	once sync.Once
	id   atomic.Pointer[string]
}

// containerLeaseTTL bounds a lease left by a Runner that died; a Runner
// that lives longer keeps using the ID, which holds nothing.
const containerLeaseTTL = 24 * time.Hour

// WithContainerLease is ctx for NewContainer.
func (r *Host) WithContainerLease(ctx context.Context) context.Context {
	if r.lease.made.Add(1) >= 2 {
		r.lease.once.Do(func() {
			l, err := r.Containerd.LeasesService().Create(ctx, leases.WithID(reaper.ContainerLeasePrefix+strings.TrimPrefix(NewID(), "bx-")),
				leases.WithExpiration(containerLeaseTTL), leases.WithLabel(reaper.LabelOwner, r.Owner))
			if err != nil {
				log.G(ctx).WithError(err).Debug("a lease for containers: each gets its own")
				return
			}
			r.lease.id.Store(&l.ID)
		})
	}
	if id := r.lease.id.Load(); id != nil {
		return leases.WithLease(ctx, *id)
	}
	return ctx
}

// CloseContainerLease removes the lease, if there is one.
func (r *Host) CloseContainerLease() {
	id := r.lease.id.Load()
	if id == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reaper.CleanupTimeout)
	defer cancel()
	if err := r.Containerd.LeasesService().Delete(ctx, leases.Lease{ID: *id}); err != nil && !errdefs.IsNotFound(err) {
		log.G(ctx).WithError(err).Debugf("removing lease %s", *id)
	}
}
