package snapshots

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/boxer-dev/boxer/fault"
	"golang.org/x/sys/unix"
)

// TestRemoveBuildDirUnmountsFirst mimics a debootstrap killed mid-way: a
// tmpfs /dev with a bind-mounted device node inside the target. Removing the
// build directory must unmount them, never delete through them.
func TestRemoveBuildDirUnmountsFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to mount")
	}
	dir := t.TempDir()
	dev := filepath.Join(dir, "rootfs", "dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	null := filepath.Join(dev, "null")
	if err := os.WriteFile(null, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/dev/null", null, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := removeBuildDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", dir, err)
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("host /dev/null damaged: %v", err)
	}
}

// TestCacheFull checks when a failed build is blamed on a full layer
// cache: ENOSPC always; a failed download only on a (nearly) full
// filesystem; anything else never.
func TestCacheFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to mount")
	}
	big := t.TempDir() // the disk of /tmp: more than cacheFullBelow free
	small := t.TempDir()
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(small, unix.MNT_DETACH)
	download := errors.New("running debootstrap: exit status 1: E: Couldn't download http://deb.debian.org/debian/dists/bookworm/main/binary-amd64/Packages")
	nodev := errors.New("running debootstrap: exit status 1: E: Cannot install into target '/x' mounted with noexec or nodev")
	enospc := fmt.Errorf("writing layer: %w", &fs.PathError{Op: "write", Path: "layer.tar", Err: unix.ENOSPC})
	for _, tc := range []struct {
		cache string
		err   error
		full  bool
	}{
		{small, download, true},
		{small, nodev, false},
		{big, download, false},
		{big, enospc, true},
	} {
		got := cacheFull(tc.cache, "x", tc.err)
		if fault.Is(got) != tc.full {
			t.Errorf("cacheFull(%s, %v) = %v, want a fault: %v", tc.cache, tc.err, got, tc.full)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("cacheFull(%v) lost the cause: %v", tc.err, got)
		}
	}
}
