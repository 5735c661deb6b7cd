package imagebuild

// A step's layer: its writable snapshot, the diff committed as a blob,
// the snapshot committed under its chain ID, and the cache entry.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/diff"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/rootfs"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/boxer-dev/boxer/snapshots"
)

// layerStep makes the layer of the step whose key is b.key, unless the
// cache has it: do changes the writable snapshot active (upper is its
// upper directory), then setuid bits and file capabilities are cleared
// in what it wrote, and the difference is committed.
func (b *builder) layerStep(ctx context.Context, text string, do func(ctx context.Context, active, upper string) error) (cached bool, err error) {
	if !b.o.NoCache {
		if ok, err := b.fromCache(ctx); ok || err != nil {
			return ok, err
		}
	}
	active := "boxer-build-" + randomHex()
	mounts, err := b.sn.Prepare(ctx, active, identity.ChainID(b.diffIDs).String())
	if err != nil {
		return false, fmt.Errorf("preparing a snapshot: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			if rerr := b.sn.Remove(context.WithoutCancel(ctx), active); rerr != nil && !errdefs.IsNotFound(rerr) {
				err = errors.Join(err, fmt.Errorf("removing snapshot %s: %w", active, rerr))
			}
		}
	}()
	upper, err := upperDir(mounts)
	if err != nil {
		return false, err
	}
	if err := do(ctx, active, upper); err != nil {
		return false, err
	}
	if err := snapshots.StripPrivileges(upper); err != nil {
		return false, err
	}
	desc, err := rootfs.CreateDiff(ctx, active, b.sn, b.client.DiffService(),
		diff.WithMediaType(ocispec.MediaTypeImageLayer), diff.WithReference("boxer-build-"+b.key))
	if err != nil {
		return false, fmt.Errorf("taking the step's diff: %w", err)
	}
	// Uncompressed: the layer's digest is its diff ID.
	diffIDs := append(append([]digest.Digest(nil), b.diffIDs...), desc.Digest)
	chain := identity.ChainID(diffIDs).String()
	if err := b.sn.Commit(ctx, chain, active); errdefs.IsAlreadyExists(err) {
		// The same layer on the same parent, built before.
	} else if err != nil {
		return false, fmt.Errorf("committing the step's snapshot: %w", err)
	} else {
		committed = true
	}
	b.layers = append(b.layers, ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size})
	b.diffIDs = diffIDs
	b.history = append(b.history, ocispec.History{CreatedBy: text})
	_, err = b.writeImage(ctx, CachePrefix+b.key, map[string]string{LabelStep: label(text), LabelStepKey: b.key})
	return false, err
}

// fromCache takes the step's layers from its cache entry, if there is one.
func (b *builder) fromCache(ctx context.Context) (bool, error) {
	img, err := b.client.ImageService().Get(ctx, CachePrefix+b.key)
	if errdefs.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("looking up the cache: %w", err)
	}
	if _, err := b.load(ctx, img); err != nil {
		return false, fmt.Errorf("reading cache entry %s: %w", img.Name, err)
	}
	if _, err := b.sn.Stat(ctx, identity.ChainID(b.diffIDs).String()); errdefs.IsNotFound(err) {
		// Its snapshots were collected (the record kept its blobs).
		i := containerd.NewImage(b.client, img)
		if err := i.Unpack(ctx, snapshots.Snapshotter); err != nil {
			return false, fmt.Errorf("unpacking cache entry %s: %w", img.Name, err)
		}
	} else if err != nil {
		return false, err
	}
	return true, nil
}

// writeImage stores the image so far, config and manifest, as the
// record name with labels (created or updated). The config carries no
// creation time: the same steps make the same digest.
func (b *builder) writeImage(ctx context.Context, name string, labels map[string]string) (images.Image, error) {
	chain := identity.ChainID(b.diffIDs).String()
	cfg := ocispec.Image{
		Platform: b.plat,
		Config:   b.st.config,
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: b.diffIDs},
		History:  b.history,
	}
	cfgDesc, err := writeJSON(ctx, b.cs, ocispec.MediaTypeImageConfig, cfg, map[string]string{
		// The committed snapshots live as long as the config does.
		"containerd.io/gc.ref.snapshot." + snapshots.Snapshotter: chain,
	})
	if err != nil {
		return images.Image{}, fmt.Errorf("writing config: %w", err)
	}
	refs := map[string]string{"containerd.io/gc.ref.content.config": cfgDesc.Digest.String()}
	for i, l := range b.layers {
		refs["containerd.io/gc.ref.content.l."+strconv.Itoa(i)] = l.Digest.String()
	}
	mf := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    b.layers,
	}
	mfDesc, err := writeJSON(ctx, b.cs, ocispec.MediaTypeImageManifest, mf, refs)
	if err != nil {
		return images.Image{}, fmt.Errorf("writing manifest: %w", err)
	}
	rec := images.Image{Name: name, Target: mfDesc, Labels: labels}
	is := b.client.ImageService()
	if _, err := is.Create(ctx, rec); errdefs.IsAlreadyExists(err) {
		if _, err := is.Update(ctx, rec, "target", "labels"); err != nil {
			return images.Image{}, fmt.Errorf("updating image %s: %w", name, err)
		}
	} else if err != nil {
		return images.Image{}, fmt.Errorf("creating image %s: %w", name, err)
	}
	return rec, nil
}

func writeJSON(ctx context.Context, cs content.Store, mediaType string, v any, labels map[string]string) (ocispec.Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := content.WriteBlob(ctx, cs, "boxer-"+desc.Digest.Encoded(), strings.NewReader(string(data)), desc, content.WithLabels(labels)); err != nil {
		return ocispec.Descriptor{}, err
	}
	// WriteBlob skips an existing blob, labels and all: set them anyway.
	var paths []string
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	if _, err := cs.Update(ctx, content.Info{Digest: desc.Digest, Labels: labels}, paths...); err != nil {
		return ocispec.Descriptor{}, err
	}
	return desc, nil
}

// upperDir is the writable directory of an active snapshot's mounts.
func upperDir(mounts []mount.Mount) (string, error) {
	if len(mounts) == 1 {
		for _, o := range mounts[0].Options {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				return v, nil
			}
		}
		if mounts[0].Type == "bind" {
			return mounts[0].Source, nil
		}
	}
	return "", fmt.Errorf("unexpected mounts %v of a writable snapshot", mounts)
}

// onHost mounts the snapshot active on the host, runs do on its root
// and unmounts it.
func (b *builder) onHost(ctx context.Context, active string, do func(root string) error) error {
	mounts, err := b.sn.Mounts(ctx, active)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "boxer-build-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := mount.All(mounts, dir); err != nil {
		return fmt.Errorf("mounting the step's snapshot: %w", err)
	}
	err = do(dir)
	if uerr := mount.UnmountAll(dir, 0); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unmounting %s: %w", dir, uerr))
	}
	return err
}

// label fits a step's text in a containerd label (4 KiB with its key).
func label(text string) string {
	if len(text) > 1000 {
		return text[:1000] + "..."
	}
	return text
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
