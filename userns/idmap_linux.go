package userns

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MountIDMapped mounts a read-only root at target from layers (one
// directory, or an overlay's lower layers, uppermost first), each seen
// through the user namespace bound at nsPath: a file the image gives to
// id n is id n inside the namespace, as in the image, and id block+n on
// the host, not the overflow id. The layers themselves are not changed
// and stay shared by every sandbox. overlayfs cannot be idmapped itself
// (mount_setattr answers EINVAL), so each layer is, and the overlay is
// made over them (Linux 5.19). On error nothing is mounted.
func MountIDMapped(nsPath string, layers []string, target string) error {
	if len(layers) == 0 {
		return errors.New("idmapping the root: no layers")
	}
	ns, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("idmapping the root: %w", err)
	}
	defer unix.Close(ns)
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, l := range layers {
		fd, err := unix.OpenTree(unix.AT_FDCWD, l, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("idmapping the root: %w", &os.PathError{Op: "open_tree", Path: l, Err: err})
		}
		fds = append(fds, fd)
		attr := unix.MountAttr{
			Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
			Userns_fd: uint64(ns),
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fmt.Errorf("idmapping the root: %s: mount_setattr: %w", l, err)
		}
	}
	if len(fds) == 1 {
		if err := unix.MoveMount(fds[0], "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("idmapping the root: move_mount: %w", err)
		}
		return nil
	}
	// The detached layers are reached through their descriptors; the
	// overlay keeps them once mounted.
	lower := make([]string, len(fds))
	for i, fd := range fds {
		lower[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	if err := unix.Mount("overlay", target, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "lowerdir="+strings.Join(lower, ":")); err != nil {
		return fmt.Errorf("idmapping the root: mounting the overlay of %d layers: %w", len(fds), err)
	}
	return nil
}

// ErrNoIDMap says that the host cannot give sandboxes idmapped roots.
var ErrNoIDMap = errors.New("idmapped mounts do not work here")

// probeIDMapped mounts under dir an idmapped root of two layers made
// there, through the namespace bound at nsPath, as a sandbox's root is
// mounted, and checks that host root's file shows as base's, the
// namespace's root, on the host; it unmounts it.
func probeIDMapped(nsPath string, base uint32, dir string) error {
	upper, lower, root := dir+"/upper", dir+"/lower", dir+"/root"
	for _, d := range []string{upper, lower, root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(lower+"/file", nil, 0o644); err != nil {
		return err
	}
	if err := MountIDMapped(nsPath, []string{upper, lower}, root); err != nil {
		return fmt.Errorf("%w: %w", ErrNoIDMap, err)
	}
	defer unix.Unmount(root, unix.MNT_DETACH)
	var st unix.Stat_t
	if err := unix.Stat(root+"/file", &st); err != nil {
		return fmt.Errorf("%w: %w", ErrNoIDMap, err)
	}
	if st.Uid != base || st.Gid != base {
		return fmt.Errorf("%w: root's file shows as %d:%d through the mount, not %d:%d", ErrNoIDMap, st.Uid, st.Gid, base, base)
	}
	return nil
}
