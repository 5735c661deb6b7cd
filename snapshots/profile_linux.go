package snapshots

// The login profile of boxer's images: E2B's SDKs run every command as
// `bash -l -c CMD`, and Debian's /etc/profile forks `id -u` for each.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// idCheck is how Debian's /etc/profile asks whether it runs as root;
// idCheckQuick asks bash's EUID first (set in every bash), so that a
// login bash forks no id(1), and falls back to id -u in other shells.
const (
	idCheck      = `"$(id -u)"`
	idCheckQuick = `"${EUID:-$(id -u)}"`
)

// quickProfile makes rootfs's /etc/profile ask bash's EUID before id -u
// (see idCheck); a profile without Debian's check is left as it is.
func quickProfile(rootfs string) error {
	path := filepath.Join(rootfs, "etc", "profile")
	info, err := os.Lstat(path)
	if os.IsNotExist(err) || err == nil && !info.Mode().IsRegular() {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading /etc/profile: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading /etc/profile: %w", err)
	}
	quick := bytes.ReplaceAll(data, []byte(idCheck), []byte(idCheckQuick))
	if bytes.Equal(quick, data) {
		return nil
	}
	if err := os.WriteFile(path, quick, info.Mode().Perm()); err != nil {
		return fmt.Errorf("writing /etc/profile: %w", err)
	}
	return nil
}
