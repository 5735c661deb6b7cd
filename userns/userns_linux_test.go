package userns

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netOwner is the host uid owning the user namespace that owns the
// network namespace bound at path (ioctl NS_GET_USERNS, then Owner's).
func netOwner(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fd, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.IoctlGetUint32(fd, unix.NS_GET_OWNER_UID)
}

// TestMake makes two namespaces at once, the second with a network
// namespace, with util-linux's unshare and with boxer-wrap's holder (in a
// directory the blocks' ids cannot enter): each owned by its block's
// first id, mapping 0-65535 onto its block, and gone with its lease on
// Remove.
func TestMake(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("makes namespaces: run as root")
	}
	t.Run("unshare", func(t *testing.T) { testMake(t, Options{}) })
	t.Run("boxer-wrap", func(t *testing.T) {
		dir := t.TempDir() // 0700
		o := Options{Wrap: filepath.Join(dir, "boxer-wrap"), Hold: filepath.Join(dir, "hold"), HoldNet: filepath.Join(dir, "hold-net")}
		if out, err := exec.Command("musl-gcc", "-static", "-Os", "-Wall", "-Werror", "-o", o.Wrap, "../init/boxer-wrap.c").CombinedOutput(); err != nil {
			t.Fatalf("building boxer-wrap: %v: %s", err, out)
		}
		for p, ns := range map[string]string{o.Hold: "user", o.HoldNet: "user,net"} {
			if err := os.WriteFile(p, []byte("#!"+o.Wrap+"\nunshare "+ns+"\nhold ready\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		testMake(t, o)
	})
}

func testMake(t *testing.T, o Options) {
	tmp := t.TempDir()
	o.Dir, o.Range = filepath.Join(tmp, "leases"), Range{Start: 3 << 30, Count: 2 * Size}
	var all []*NS
	for i := range 2 {
		run := filepath.Join(tmp, "run"+string(rune('a'+i)))
		if err := os.Mkdir(run, 0o700); err != nil {
			t.Fatal(err)
		}
		var netPath string
		if i == 1 {
			netPath = filepath.Join(run, "netns")
		}
		start := time.Now()
		ns, err := Make(o, run, filepath.Join(run, "userns"), netPath)
		if err != nil {
			t.Fatalf("Make: %v", err)
		}
		t.Logf("made in %v", time.Since(start))
		all = append(all, ns)
		if want := o.Range.Block(i); ns.Base != want {
			t.Errorf("base = %d, want %d", ns.Base, want)
		}
		owner, err := Owner(ns.Path)
		if err != nil || owner != ns.Base {
			t.Errorf("owner = %d (%v), want %d", owner, err, ns.Base)
		}
		if netPath != "" {
			// The network namespace is a new one, owned by the user
			// namespace: the owner of its owner is the block's id.
			var host, made unix.Stat_t
			if err := unix.Stat("/proc/self/ns/net", &host); err != nil {
				t.Fatal(err)
			}
			if err := unix.Stat(netPath, &made); err != nil || made.Ino == host.Ino {
				t.Errorf("network namespace at %s: %v, inode %d, the host's %d", netPath, err, made.Ino, host.Ino)
			}
			if owner, err := netOwner(netPath); err != nil || owner != ns.Base {
				t.Errorf("owner of the network namespace's user namespace = %d (%v), want %d", owner, err, ns.Base)
			}
			if err := unbind(netPath); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := Make(o, tmp, filepath.Join(tmp, "userns"), ""); err == nil || !strings.Contains(err.Error(), ErrFull.Error()) {
		t.Errorf("third Make: %v, want %v", err, ErrFull)
	}
	if _, err := os.Stat(filepath.Join(tmp, "userns")); !os.IsNotExist(err) {
		t.Errorf("a refused Make left its file: %v", err)
	}
	for _, ns := range all {
		if err := ns.Remove(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(ns.Path); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", ns.Path, err)
		}
	}
	entries, _ := os.ReadDir(o.Dir)
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("lease %s left", e.Name())
		}
	}
}
