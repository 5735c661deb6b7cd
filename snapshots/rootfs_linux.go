package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// viewKey is the snapshot key of an image's shared view.
func viewKey(img images.Image) string {
	return "boxer-view-" + img.Target.Digest.Encoded()
}

// ViewKey is the key of the view Resolve gives for ref's current image,
// from the image record alone (one call): whether a root made earlier is
// still the image's.
func ViewKey(ctx context.Context, client *containerd.Client, ref string) (string, error) {
	img, err := client.ImageService().Get(ctx, ref)
	if full := NormalizeRef(ref); errdefs.IsNotFound(err) && full != ref {
		img, err = client.ImageService().Get(ctx, full)
	}
	if errdefs.IsNotFound(err) {
		return "", fmt.Errorf("%s: %w", ref, ErrImageNotFound)
	} else if err != nil {
		return "", fmt.Errorf("looking up image %s: %w", ref, err)
	}
	return viewKey(img), nil
}

// Resolve finds ref in containerd and returns its root filesystem. On the
// common path this is two small calls (the image record and the view's
// stat); the first run of an image unpacks it and creates its view.
func Resolve(ctx context.Context, client *containerd.Client, ref string) (Rootfs, error) {
	img, err := client.ImageService().Get(ctx, ref)
	if full := NormalizeRef(ref); errdefs.IsNotFound(err) && full != ref {
		img, err = client.ImageService().Get(ctx, full)
	}
	if errdefs.IsNotFound(err) {
		return Rootfs{}, fmt.Errorf("%s: %w", ref, ErrImageNotFound)
	} else if err != nil {
		return Rootfs{}, fmt.Errorf("looking up image %s: %w", ref, err)
	}
	r := Rootfs{Image: ref, Snapshotter: Snapshotter, Key: viewKey(img)}
	sn := client.SnapshotService(Snapshotter)
	info, err := sn.Stat(ctx, r.Key)
	if err == nil {
		if cfg, ok := info.Labels[LabelConfig]; ok && json.Unmarshal([]byte(cfg), &r.Config) == nil {
			return r, nil
		}
	} else if !errdefs.IsNotFound(err) {
		return Rootfs{}, fmt.Errorf("looking up view of %s: %w", ref, err)
	}
	return createView(ctx, client, img, r)
}

func createView(ctx context.Context, client *containerd.Client, img images.Image, r Rootfs) (Rootfs, error) {
	i := containerd.NewImage(client, img)
	ok, err := i.IsUnpacked(ctx, Snapshotter)
	if err != nil {
		return Rootfs{}, fmt.Errorf("checking unpack of %s: %w", r.Image, err)
	}
	if !ok {
		if err := i.Unpack(ctx, Snapshotter); err != nil {
			return Rootfs{}, fmt.Errorf("unpacking %s: %w", r.Image, err)
		}
	}
	cs := client.ContentStore()
	cfgDesc, err := i.Config(ctx)
	if err != nil {
		return Rootfs{}, fmt.Errorf("reading config of %s: %w", r.Image, err)
	}
	var cfg ocispec.Image
	if err := readJSON(ctx, client, cfgDesc, &cfg); err != nil {
		return Rootfs{}, fmt.Errorf("reading config of %s: %w", r.Image, err)
	}
	r.Config = cfg.Config
	diffIDs, err := img.RootFS(ctx, cs, platforms.Default())
	if err != nil {
		return Rootfs{}, fmt.Errorf("reading layers of %s: %w", r.Image, err)
	}
	parent := identity.ChainID(diffIDs).String()
	// Until the view exists nothing but this lease keeps the mount-point
	// layer from containerd's garbage collector, which may run at any time.
	ctx, done, err := client.WithLease(ctx)
	if err != nil {
		return Rootfs{}, fmt.Errorf("preparing %s: %w", r.Image, err)
	}
	defer done(context.WithoutCancel(ctx))
	if img.Labels[LabelBuildKey] == "" {
		// Not built by boxer: the image may lack the mount points a
		// read-only root needs (/workspace, /code, even /proc).
		if parent, err = mountPointLayer(ctx, client, img, parent); err != nil {
			return Rootfs{}, fmt.Errorf("preparing %s: %w", r.Image, err)
		}
	}
	// Only what a run uses, so the label stays within containerd's 4 KiB.
	small, err := json.Marshal(ocispec.ImageConfig{User: cfg.Config.User, Env: cfg.Config.Env, WorkingDir: cfg.Config.WorkingDir})
	if err != nil {
		return Rootfs{}, err
	}
	labels := map[string]string{gcRoot: "true", "boxer.image": r.Image}
	if len(small) < 4000 {
		labels[LabelConfig] = string(small)
	}
	_, err = client.SnapshotService(Snapshotter).View(ctx, r.Key, parent, snapshots.WithLabels(labels))
	if err != nil && !errdefs.IsAlreadyExists(err) {
		return Rootfs{}, fmt.Errorf("creating view of %s: %w", r.Image, err)
	}
	return r, nil
}

// mountPoints are the directories every sandbox mounts something on.
var mountPoints = []struct {
	path string
	mode os.FileMode
}{
	{"proc", 0o555}, {"sys", 0o555}, {"dev", 0o755}, {"tmp", 0o1777},
	{"workspace", 0o755}, {"code", 0o755},
}

// mountPointLayer commits, once per image, a small snapshot on top of the
// image's layers that holds the mount points, and returns its name for the
// shared view to sit on. ctx must carry a lease, which then holds the layer
// until the caller's view references it.
func mountPointLayer(ctx context.Context, client *containerd.Client, img images.Image, parent string) (string, error) {
	name := "boxer-base-" + img.Target.Digest.Encoded()
	lease, ok := leases.FromContext(ctx)
	if !ok {
		return "", errors.New("mount-point layer: no lease in context")
	}
	// A layer left by an earlier view may be unreferenced: the lease must
	// hold it before it is found, or the collector could take it between
	// this stat and the view.
	if err := client.LeasesService().AddResource(ctx, leases.Lease{ID: lease}, leases.Resource{ID: name, Type: "snapshots/" + Snapshotter}); err != nil {
		return "", err
	}
	sn := client.SnapshotService(Snapshotter)
	if _, err := sn.Stat(ctx, name); err == nil {
		return name, nil
	} else if !errdefs.IsNotFound(err) {
		return "", err
	}
	active := fmt.Sprintf("%s-prep-%d", name, time.Now().UnixNano())
	mounts, err := sn.Prepare(ctx, active, parent)
	if err != nil {
		return "", err
	}
	defer sn.Remove(context.WithoutCancel(ctx), active)
	dir, err := os.MkdirTemp("", "boxer-prep-")
	if err != nil {
		return "", err
	}
	defer os.Remove(dir)
	if err := mount.All(mounts, dir); err != nil {
		return "", fmt.Errorf("mounting %s: %w", active, err)
	}
	var errs []error
	for _, mp := range mountPoints {
		// An image may hold a file or a symlink there: mount points must be
		// real directories inside the root, so those are left alone and the
		// run fails with runc's message.
		p := filepath.Join(dir, mp.path)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, mp.mode); err != nil {
				errs = append(errs, err)
			} else if err := os.Chmod(p, mp.mode); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := mount.UnmountAll(dir, 0); err != nil {
		errs = append(errs, fmt.Errorf("unmounting %s: %w", dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	if err := sn.Commit(ctx, name, active); err != nil && !errdefs.IsAlreadyExists(err) {
		return "", fmt.Errorf("committing mount points: %w", err)
	}
	return name, nil
}

func readJSON(ctx context.Context, client *containerd.Client, desc ocispec.Descriptor, v any) error {
	ra, err := client.ContentStore().ReaderAt(ctx, desc)
	if err != nil {
		return err
	}
	defer ra.Close()
	buf := make([]byte, ra.Size())
	if _, err := ra.ReadAt(buf, 0); err != nil {
		return err
	}
	return json.Unmarshal(buf, v)
}

// List returns boxer's images (every image in the namespace), with the size
// of their layers.
func List(ctx context.Context, client *containerd.Client) ([]Image, error) {
	imgs, err := client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		im := toImage(img)
		if size, err := img.Size(ctx, client.ContentStore(), platforms.Default()); err == nil {
			im.Size = size
		}
		out = append(out, im)
	}
	return out, nil
}

// Remove deletes the name ref. The image goes with its last name: then
// its shared view is removed too, and containerd's garbage collector frees
// the layers and snapshots nothing else uses. While another name holds the
// same image, only ref goes, even if a sandbox uses the image.
func Remove(ctx context.Context, client *containerd.Client, ref string) error {
	is := client.ImageService()
	img, err := is.Get(ctx, ref)
	if full := NormalizeRef(ref); errdefs.IsNotFound(err) && full != ref {
		ref = full
		img, err = is.Get(ctx, ref)
	}
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%s: %w", ref, ErrImageNotFound)
	} else if err != nil {
		return fmt.Errorf("looking up image %s: %w", ref, err)
	}
	all, err := is.List(ctx)
	if err != nil {
		return fmt.Errorf("looking up other names of %s: %w", ref, err)
	}
	others := 0
	for _, o := range all {
		if o.Name != img.Name && o.Target.Digest == img.Target.Digest {
			others++
		}
	}
	if others > 0 {
		// The view is keyed by the digest, which another name keeps.
		if err := is.Delete(ctx, ref); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("removing name %s: %w", ref, err)
		}
		return nil
	}
	// A running sandbox's root is this image's view: removing it would let
	// the garbage collector take the layer from under the sandbox.
	ctrs, err := client.ContainerService().List(ctx)
	if err != nil {
		return fmt.Errorf("checking users of %s: %w", ref, err)
	}
	users := 0
	for _, c := range ctrs {
		if c.SnapshotKey == viewKey(img) || c.Labels[LabelView] == viewKey(img) {
			users++
		}
	}
	if users > 0 {
		return &inUseError{fmt.Sprintf("image %s is in use by %d running sandbox(es): try again when they end", ref, users)}
	}
	if err := client.SnapshotService(Snapshotter).Remove(ctx, viewKey(img)); err != nil && !errdefs.IsNotFound(err) {
		if errdefs.IsFailedPrecondition(err) {
			return &inUseError{fmt.Sprintf("image %s is in use by a running sandbox: try again when it ends", ref)}
		}
		return fmt.Errorf("removing view of %s: %w", ref, err)
	}
	if err := is.Delete(ctx, ref, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing image %s: %w", ref, err)
	}
	return nil
}
