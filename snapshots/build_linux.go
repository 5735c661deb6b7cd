package snapshots

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/fault"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/archive"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/moby/sys/mountinfo"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
)

func (o BuildOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "boxer: "+format+"\n", args...)
	}
}

// Build makes the image NAME from a minimal Debian with the given packages,
// unless an image with the same inputs is already stored: then it returns at
// once. It unpacks the image so that runs never have to.
func Build(ctx context.Context, client *containerd.Client, o BuildOptions) (Image, error) {
	name := Normalize(o.Name)
	key := o.Key()
	if img, err := client.ImageService().Get(ctx, name); err == nil && img.Labels[LabelBuildKey] == key {
		if err := unpack(ctx, client, img, o); err != nil {
			return Image{}, err
		}
		return toImage(img), nil
	} else if err != nil && !errdefs.IsNotFound(err) {
		return Image{}, fmt.Errorf("looking up %s: %w", name, err)
	}

	dir := filepath.Join(o.CacheDir, key)
	if _, err := os.Stat(filepath.Join(dir, "layer.tar")); err != nil {
		if err := buildLayer(ctx, o, dir); err != nil {
			return Image{}, err
		}
	} else {
		o.progress("using cached layer %s", dir)
	}
	return store(ctx, client, name, key, dir, o)
}

// buildLayer runs debootstrap and packs the result as dir/layer.tar.
func buildLayer(ctx context.Context, o BuildOptions, dir string) (retErr error) {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("debootstrap not found: run 'apt-get install debootstrap'")
	}
	if err := os.MkdirAll(o.CacheDir, 0o700); err != nil {
		return fmt.Errorf("creating cache dir: %w", err)
	}
	work, err := os.MkdirTemp(o.CacheDir, "build-")
	if err != nil {
		return fmt.Errorf("creating build dir: %w", err)
	}
	defer func() {
		if err := removeBuildDir(work); err != nil {
			o.progress("warning: %v", err)
		}
	}()
	defer func() {
		// Before the build directory goes: what it holds is part of what
		// filled the disk.
		if retErr != nil {
			retErr = cacheFull(o.CacheDir, o.Name, retErr)
		}
	}()
	rootfs := filepath.Join(work, "rootfs")

	start := time.Now()
	o.progress("debootstrap %s with %s from %s (about a minute)", o.Suite, strings.Join(o.Packages, ","), o.Mirror)
	args := []string{"--variant=minbase"}
	if len(o.Packages) > 0 {
		args = append(args, "--include="+strings.Join(o.Packages, ","))
	}
	args = append(args, o.Suite, rootfs, o.Mirror)
	cmd := exec.CommandContext(ctx, "debootstrap", args...)
	// debootstrap runs dpkg, chroot and friends: an interrupted build ends
	// them all, not just debootstrap itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting debootstrap: %w", err)
	}
	var last []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		last = append(last, line)
		if len(last) > 5 {
			last = last[1:]
		}
		// The I: lines name each step; the rest is noise.
		if strings.HasPrefix(line, "I: ") && o.Progress != nil {
			fmt.Fprintf(o.Progress, "boxer:   [%3.0fs] %s\n", time.Since(start).Seconds(), strings.TrimPrefix(line, "I: "))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("running debootstrap: %w: %s", err, strings.Join(last, " | "))
	}

	if err := trimRootfs(rootfs); err != nil {
		return err
	}
	o.progress("packing layer")
	empty := filepath.Join(work, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(work, "layer.tar")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := archive.WriteDiff(ctx, w, empty, rootfs); err != nil {
		f.Close()
		return fmt.Errorf("packing layer: %w", err)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return fmt.Errorf("writing layer: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Rename last: a layer.tar in the cache is always complete.
	if err := os.Rename(tmp, filepath.Join(dir, "layer.tar")); err != nil {
		return err
	}
	o.progress("built layer in %.0fs", time.Since(start).Seconds())
	return nil
}

// cacheFullBelow is the free space under which a failed download is
// blamed on a full disk: debootstrap reports a full one as a failed
// download ("E: Couldn't download ...", "E: Failed getting release file
// ..."), nothing more.
const cacheFullBelow = 64 << 20

// cacheFull returns, for a build of name that failed with err, the fault
// of a full layer cache when err is ENOSPC, or a failed download with the
// cache's filesystem (nearly) full; and err otherwise.
func cacheFull(cache, name string, err error) error {
	var st unix.Statfs_t
	if serr := unix.Statfs(cache, &st); serr != nil {
		return err
	}
	free := st.Bavail * uint64(st.Bsize)
	_, full := fault.NoSpace(err)
	msg := err.Error()
	download := strings.Contains(msg, "Couldn't download") || strings.Contains(msg, "Failed getting release file")
	if !full && (free >= cacheFullBelow || !download) {
		return err
	}
	return &fault.Error{
		What: fmt.Sprintf("no space left in the layer cache %s (%d MiB free) while building %s", cache, free>>20, name),
		Do:   "free space there, or set BOXER_CACHE to a directory on a larger filesystem, and run again",
		Err:  err,
	}
}

// removeBuildDir unmounts what an interrupted debootstrap left mounted in
// its target (it mounts proc and sysfs there, and may bind-mount host device
// nodes into a tmpfs /dev), deepest first, and only then removes the
// directory: RemoveAll must never walk into a mounted /proc, /sys or /dev.
func removeBuildDir(dir string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("reading mounts under %s: %w", dir, err)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("leaving %s in place: unmounting %s: %w", dir, m.Mountpoint, err)
		}
	}
	if left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir)); err != nil || len(left) > 0 {
		return fmt.Errorf("leaving %s in place: %d mounts remain under it", dir, len(left))
	}
	return os.RemoveAll(dir)
}

// builtMountPoints are the directories a run may mount something on, created
// empty (root, 0755) in every image boxer builds: the root is read-only and
// shared between sandboxes, so it cannot get them at run time.
// opt/boxer/site-packages is runner.PackagesDir, where a run with network
// egress gets a writable tmpfs for the packages it installs.
var builtMountPoints = []string{"workspace", "code", "opt/boxer/site-packages"}

// trimRootfs drops what a read-only sandbox root does not need and creates
// the mount points boxer uses.
func trimRootfs(rootfs string) error {
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "var/log/*", "dev/*", "tmp/*", "run/*"} {
		matches, _ := filepath.Glob(filepath.Join(rootfs, glob))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("trimming rootfs: %w", err)
			}
		}
	}
	for _, d := range builtMountPoints {
		if err := mkdirAll(rootfs, d); err != nil {
			return fmt.Errorf("creating /%s: %w", d, err)
		}
	}
	if err := quickProfile(rootfs); err != nil {
		return err
	}
	return stripPrivileges(rootfs)
}

// stripPrivileges clears the setuid and setgid bits and drops the file
// capabilities of everything under rootfs. Sandboxes run with
// no_new_privs and no capabilities, which neutralise them already; an image
// without them has nothing left to neutralise (defence in depth). Symlinks
// are never followed: their own bits mean nothing.
func stripPrivileges(rootfs string) error {
	return filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("stripping setuid bits: %w", err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if rel, _ := filepath.Rel(rootfs, p); d.IsDir() && (rel == "proc" || rel == "sys") {
			// Mount points of debootstrap's; never walk a mounted /proc.
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("stripping setuid bits: %w", err)
		}
		if mode := info.Mode(); mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			if err := os.Chmod(p, mode.Perm()|mode&fs.ModeSticky); err != nil {
				return fmt.Errorf("stripping setuid bits of %s: %w", p, err)
			}
		}
		if err := unix.Lremovexattr(p, "security.capability"); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("dropping the file capabilities of %s: %w", p, err)
		}
		return nil
	})
}

// mkdirAll creates the directory rel under root and the parents it lacks,
// each 0755 whatever the umask: the sandbox user must reach a mount point
// through them.
func mkdirAll(root, rel string) error {
	p := root
	for _, elem := range strings.Split(rel, "/") {
		p = filepath.Join(p, elem)
		if err := os.Mkdir(p, 0o755); errors.Is(err, fs.ErrExist) {
			continue
		} else if err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// store writes the cached layer, a config and a manifest into containerd's
// content store, creates or updates the image record and unpacks it.
func store(ctx context.Context, client *containerd.Client, name, key, dir string, o BuildOptions) (Image, error) {
	ctx, done, err := client.WithLease(ctx)
	if err != nil {
		return Image{}, fmt.Errorf("creating lease: %w", err)
	}
	defer done(context.WithoutCancel(ctx))
	cs := client.ContentStore()

	o.progress("storing image %s", name)
	layerPath := filepath.Join(dir, "layer.tar")
	layerDigest, layerSize, err := digestFile(layerPath)
	if err != nil {
		return Image{}, err
	}
	layer := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: layerDigest, Size: layerSize}
	lf, err := os.Open(layerPath)
	if err != nil {
		return Image{}, err
	}
	err = content.WriteBlob(ctx, cs, "boxer-layer-"+key, lf, layer)
	lf.Close()
	if err != nil {
		return Image{}, fmt.Errorf("writing layer blob: %w", err)
	}

	plat := platforms.DefaultSpec()
	created := time.Now().UTC()
	cfg := ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: plat.Architecture, OS: plat.OS},
		Config: ocispec.ImageConfig{
			User: User,
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"LANG=C.UTF-8",
				"HOME=/workspace",
			},
			WorkingDir: "/workspace",
			Labels:     map[string]string{LabelBuildKey: key},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDigest}},
		History: []ocispec.History{{
			Created:   &created,
			CreatedBy: fmt.Sprintf("boxer image build %s --packages %s --suite %s --mirror %s", o.Name, strings.Join(o.Packages, ","), o.Suite, o.Mirror),
		}},
	}
	cfgDesc, err := writeJSON(ctx, cs, ocispec.MediaTypeImageConfig, cfg, nil)
	if err != nil {
		return Image{}, fmt.Errorf("writing config: %w", err)
	}
	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layer},
	}
	// The gc.ref labels keep config and layer alive as long as the manifest is.
	mfDesc, err := writeJSON(ctx, cs, ocispec.MediaTypeImageManifest, manifest, map[string]string{
		"containerd.io/gc.ref.content.config": cfgDesc.Digest.String(),
		"containerd.io/gc.ref.content.l.0":    layerDigest.String(),
	})
	if err != nil {
		return Image{}, fmt.Errorf("writing manifest: %w", err)
	}

	rec := images.Image{
		Name:   name,
		Target: mfDesc,
		Labels: map[string]string{LabelBuildKey: key},
	}
	is := client.ImageService()
	if _, err := is.Create(ctx, rec); errdefs.IsAlreadyExists(err) {
		if _, err := is.Update(ctx, rec, "target", "labels"); err != nil {
			return Image{}, fmt.Errorf("updating image %s: %w", name, err)
		}
	} else if err != nil {
		return Image{}, fmt.Errorf("creating image %s: %w", name, err)
	}
	stored, err := is.Get(ctx, name)
	if err != nil {
		return Image{}, err
	}
	if err := unpack(ctx, client, stored, o); err != nil {
		return Image{}, err
	}
	return toImage(stored), nil
}

func unpack(ctx context.Context, client *containerd.Client, img images.Image, o BuildOptions) error {
	i := containerd.NewImage(client, img)
	ok, err := i.IsUnpacked(ctx, Snapshotter)
	if err != nil {
		return fmt.Errorf("checking unpack of %s: %w", img.Name, err)
	}
	if ok {
		return nil
	}
	o.progress("unpacking %s", img.Name)
	if err := i.Unpack(ctx, Snapshotter); err != nil {
		return fmt.Errorf("unpacking %s: %w", img.Name, err)
	}
	return nil
}

func writeJSON(ctx context.Context, cs content.Store, mediaType string, v any, labels map[string]string) (ocispec.Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	var opts []content.Opt
	if labels != nil {
		opts = append(opts, content.WithLabels(labels))
	}
	if err := content.WriteBlob(ctx, cs, "boxer-"+desc.Digest.Encoded(), strings.NewReader(string(data)), desc, opts...); err != nil {
		return ocispec.Descriptor{}, err
	}
	if labels != nil {
		// WriteBlob skips an existing blob, labels and all: set them anyway.
		if _, err := cs.Update(ctx, content.Info{Digest: desc.Digest, Labels: labels}, labelPaths(labels)...); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	return desc, nil
}

func labelPaths(labels map[string]string) []string {
	var paths []string
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	return paths
}

func digestFile(path string) (digest.Digest, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	d := digest.Canonical.Digester()
	n, err := io.Copy(d.Hash(), f)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", path, err)
	}
	return d.Digest(), n, nil
}

func toImage(img images.Image) Image {
	return Image{
		Name:     img.Name,
		Digest:   img.Target.Digest,
		Size:     img.Target.Size,
		Created:  img.CreatedAt,
		BuildKey: img.Labels[LabelBuildKey],
	}
}
