package imagebuild

import (
	"context"
	"fmt"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
)

// Prune removes every build cache entry (the image records named
// CachePrefix...) and returns their names: containerd's garbage
// collector then frees the layers and snapshots no image uses.
func Prune(ctx context.Context, client *containerd.Client) ([]string, error) {
	is := client.ImageService()
	all, err := is.List(ctx, "labels."+`"`+LabelStepKey+`"`)
	if err != nil {
		return nil, fmt.Errorf("listing the build cache: %w", err)
	}
	var gone []string
	for i, img := range all {
		if !strings.HasPrefix(img.Name, CachePrefix) {
			continue
		}
		var opts []images.DeleteOpt
		if i == len(all)-1 {
			opts = append(opts, images.SynchronousDelete())
		}
		if err := is.Delete(ctx, img.Name, opts...); err != nil && !errdefs.IsNotFound(err) {
			return gone, fmt.Errorf("removing %s: %w", img.Name, err)
		}
		gone = append(gone, img.Name)
	}
	return gone, nil
}

// CacheEntries lists the build cache: each entry's name, the step it is
// the layer of, and when it was made.
func CacheEntries(ctx context.Context, client *containerd.Client) ([]Entry, error) {
	all, err := client.ImageService().List(ctx, "labels."+`"`+LabelStepKey+`"`)
	if err != nil {
		return nil, fmt.Errorf("listing the build cache: %w", err)
	}
	var out []Entry
	for _, img := range all {
		if strings.HasPrefix(img.Name, CachePrefix) {
			out = append(out, Entry{Name: img.Name, Step: img.Labels[LabelStep], Created: img.CreatedAt})
		}
	}
	return out, nil
}
