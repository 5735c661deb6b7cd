//go:build !linux

package imagebuild

import (
	"context"
	"errors"

	containerd "github.com/containerd/containerd/v2/client"
)

var errNotLinux = errors.New("building images needs Linux")

// Prune returns an error: boxer keeps images only on Linux.
func Prune(ctx context.Context, client *containerd.Client) ([]string, error) {
	return nil, errNotLinux
}

// CacheEntries returns an error: boxer keeps images only on Linux.
func CacheEntries(ctx context.Context, client *containerd.Client) ([]Entry, error) {
	return nil, errNotLinux
}
