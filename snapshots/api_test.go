package snapshots

import (
	"context"
	"io"

	containerd "github.com/containerd/containerd/v2/client"
)

// The API has a body per platform (*_linux.go, snapshots_other.go): these
// pin the signatures both must have, so that vet on either platform catches
// one that drifted.
var (
	_ func(context.Context, *containerd.Client, BuildOptions) (Image, error)                = Build
	_ func(context.Context, *containerd.Client, string, string, io.Writer) ([]Image, error) = Import
	_ func(context.Context, *containerd.Client, string, bool, io.Writer) (Image, error)     = Pull
	_ func(context.Context, *containerd.Client, string) (Rootfs, error)                     = Resolve
	_ func(context.Context, *containerd.Client) ([]Image, error)                            = List
	_ func(context.Context, *containerd.Client, string) error                               = Remove
)
