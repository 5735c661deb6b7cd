package snapshots

import (
	"os"
	"path/filepath"
	"testing"

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
