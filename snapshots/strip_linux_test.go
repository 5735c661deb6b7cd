package snapshots

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStripPrivileges: setuid and setgid bits and file capabilities are
// gone; permissions, the sticky bit and symlinks are left alone.
func TestStripPrivileges(t *testing.T) {
	root := t.TempDir()
	su := filepath.Join(root, "usr", "bin", "su")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Dir(su), 0o755))
	must(os.WriteFile(su, []byte("x"), 0o755))
	must(os.Chmod(su, 0o755|fs.ModeSetuid))
	mail := filepath.Join(root, "var", "mail")
	must(os.MkdirAll(mail, 0o775))
	must(os.Chmod(mail, 0o775|fs.ModeSetgid))
	tmp := filepath.Join(root, "tmp")
	must(os.Mkdir(tmp, 0o777))
	must(os.Chmod(tmp, 0o777|fs.ModeSticky))
	ping := filepath.Join(root, "usr", "bin", "ping")
	must(os.WriteFile(ping, []byte("x"), 0o755))
	// cap_net_raw+ep, as setcap writes it (VFS_CAP_REVISION_2).
	caps := []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}
	if err := unix.Lsetxattr(ping, "security.capability", caps, 0); err != nil {
		t.Skipf("this filesystem takes no file capabilities: %v", err)
	}
	must(os.Symlink("/usr/bin/su", filepath.Join(root, "usr", "bin", "link")))

	must(stripPrivileges(root))
	for p, want := range map[string]fs.FileMode{su: 0o755, mail: 0o775 | fs.ModeDir, tmp: 0o777 | fs.ModeDir | fs.ModeSticky, ping: 0o755} {
		st, err := os.Lstat(p)
		must(err)
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode(), want)
		}
	}
	if _, err := unix.Lgetxattr(ping, "security.capability", make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
		t.Errorf("ping keeps its file capabilities: %v", err)
	}
}
