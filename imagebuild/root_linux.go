package imagebuild

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// mountWritable mounts at target the writable overlay of an active
// snapshot's mounts, each of its layers seen through the user namespace
// bound at nsPath, whose root is host id base: root's files in the image are uid 0 inside, and what
// uid 0 inside writes is stored as uid 0 in the layer (its host id,
// the namespace's base, never reaches the disk). overlayfs cannot be
// idmapped itself, so its layers are (Linux 5.19): the lower ones
// read-only, the upper and work directories through one idmapped mount
// of their parent. With no namespace (nsPath empty: a step on runsc,
// whose gofer writes as the Sentry's ids) the overlay is mounted as it
// is. On error nothing is mounted.
func mountWritable(nsPath string, base uint32, mounts []mount.Mount, target string) error {
	if len(mounts) != 1 || mounts[0].Type != "overlay" {
		return fmt.Errorf("a step's root: unexpected mounts %v (an image with no layer?)", mounts)
	}
	var lower []string
	var upper, work string
	var rest []string
	for _, o := range mounts[0].Options {
		switch {
		case strings.HasPrefix(o, "lowerdir="):
			lower = strings.Split(strings.TrimPrefix(o, "lowerdir="), ":")
		case strings.HasPrefix(o, "upperdir="):
			upper = strings.TrimPrefix(o, "upperdir=")
		case strings.HasPrefix(o, "workdir="):
			work = strings.TrimPrefix(o, "workdir=")
		default:
			rest = append(rest, o)
		}
	}
	if len(lower) == 0 || upper == "" || filepath.Dir(upper) != filepath.Dir(work) {
		return fmt.Errorf("a step's root: unexpected overlay options %v", mounts[0].Options)
	}
	if nsPath == "" {
		err := unix.Mount("overlay", target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, strings.Join(mounts[0].Options, ","))
		if err != nil {
			return fmt.Errorf("a step's root: mounting the overlay of %d layers: %w", len(lower), err)
		}
		return nil
	}
	ns, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("a step's root: %w", err)
	}
	defer unix.Close(ns)
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	idmap := func(dir string, flags uint64) (string, error) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return "", &os.PathError{Op: "open_tree", Path: dir, Err: err}
		}
		fds = append(fds, fd)
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | flags, Userns_fd: uint64(ns)}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return "", fmt.Errorf("%s: mount_setattr: %w", dir, err)
		}
		return "/proc/self/fd/" + strconv.Itoa(fd), nil
	}
	for i, l := range lower {
		if lower[i], err = idmap(l, unix.MOUNT_ATTR_RDONLY); err != nil {
			return fmt.Errorf("a step's root: %w", err)
		}
	}
	parent, err := idmap(filepath.Dir(upper), 0)
	if err != nil {
		return fmt.Errorf("a step's root: %w", err)
	}
	opts := append(rest,
		"lowerdir="+strings.Join(lower, ":"),
		"upperdir="+parent+"/"+filepath.Base(upper),
		"workdir="+parent+"/"+filepath.Base(work))
	data := strings.Join(opts, ",")
	if len(data) >= os.Getpagesize() {
		return errors.New("a step's root: too many layers for one overlay mount")
	}
	// overlayfs writes its upper layer with its mounter's credentials,
	// whose file system ids must map through the idmapped upper mount:
	// the namespace's root, base on the host (host root maps to nothing
	// there: EOVERFLOW, and a read-only overlay).
	err = asFSIDs(base, func() error {
		return unix.Mount("overlay", target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, data)
	})
	if err != nil {
		return fmt.Errorf("a step's root: mounting the overlay of %d layers: %w", len(lower), err)
	}
	return nil
}

// asFSIDs runs fn on a thread of its own whose file system uid and gid
// are id, with its capabilities kept (a change of fsuid from 0 drops the
// file ones from the effective set: they are raised again). The thread is
// never given back to the Go runtime: it ends with fn.
func asFSIDs(id uint32, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		unix.Setfsgid(int(id))
		unix.Setfsuid(int(id))
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errc <- fmt.Errorf("capget: %w", err)
			return
		}
		data[0].Effective, data[1].Effective = data[0].Permitted, data[1].Permitted
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- fmt.Errorf("capset: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
