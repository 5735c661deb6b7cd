package sandbox

// The root of a request's image on this host.

import (
	"context"
	"errors"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/snapshots"
)

// Rootfs checks the host's cgroups and returns the root of req's image.
func (h *Host) Rootfs(ctx context.Context, req contract.Request) (snapshots.Rootfs, error) {
	if err := cgroups.Check(h.Cgroups); err != nil {
		return snapshots.Rootfs{}, err
	}
	rootfs, err := snapshots.Resolve(ctx, h.Containerd, req.ImageName())
	if errors.Is(err, snapshots.ErrImageNotFound) {
		e := &contract.ImageError{Ref: req.ImageName()}
		if req.Image == "" {
			e.Lang = req.Lang
		}
		return rootfs, e
	}
	return rootfs, err
}
