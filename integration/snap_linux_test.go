package integration

import "github.com/containerd/containerd/v2/core/snapshots"

type snapshotInfo = snapshots.Info

const snapshotActive = snapshots.KindActive
