//go:build !linux

package snapshots

import (
	"context"
	"errors"
	"io"

	containerd "github.com/containerd/containerd/v2/client"
)

var errNotLinux = errors.New("boxer images need Linux")

// Build returns an error: building an image runs debootstrap and mounts.
func Build(ctx context.Context, client *containerd.Client, o BuildOptions) (Image, error) {
	return Image{}, errNotLinux
}

// Import returns an error: boxer stores and unpacks images only on Linux.
func Import(ctx context.Context, client *containerd.Client, file, name string, progress io.Writer) ([]Image, error) {
	return nil, errNotLinux
}

// Pull returns an error: boxer stores and unpacks images only on Linux.
func Pull(ctx context.Context, client *containerd.Client, ref string, plainHTTP bool, progress io.Writer) (Image, error) {
	return Image{}, errNotLinux
}

// Resolve returns an error: a root filesystem is an overlayfs view.
func Resolve(ctx context.Context, client *containerd.Client, ref string) (Rootfs, error) {
	return Rootfs{}, errNotLinux
}

// ViewKey returns an error: boxer keeps images only on Linux.
func ViewKey(ctx context.Context, client *containerd.Client, ref string) (string, error) {
	return "", errNotLinux
}

// List returns an error: boxer keeps images only on Linux.
func List(ctx context.Context, client *containerd.Client) ([]Image, error) {
	return nil, errNotLinux
}

// Remove returns an error: boxer keeps images only on Linux.
func Remove(ctx context.Context, client *containerd.Client, ref string) error {
	return errNotLinux
}
