package userns

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountIDMapped mounts a root of one layer and one of two through a
// namespace: the layers' files show their ids moved onto the block on the
// host, the root refuses writes, and a missing layer mounts nothing and
// says it is missing (mountRoot asks containerd again then).
func TestMountIDMapped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	tmp := t.TempDir()
	o := Options{Dir: filepath.Join(tmp, "leases"), Range: Range{Start: 3 << 30, Count: Size}}
	ns, err := Make(o, tmp, filepath.Join(tmp, "userns"), "")
	if err != nil {
		t.Fatalf("Make: %v", err)
	}
	t.Cleanup(func() { ns.Remove() })
	upper, lower := filepath.Join(tmp, "upper"), filepath.Join(tmp, "lower")
	for _, d := range []string{upper, lower} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]int{filepath.Join(lower, "root"): 0, filepath.Join(upper, "user"): 1000}
	for f, id := range files {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, id, id); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		layers []string
		want   map[string]uint32
	}{
		{"one layer", []string{lower}, map[string]uint32{"root": ns.Base}},
		{"overlay", []string{upper, lower}, map[string]uint32{"root": ns.Base, "user": ns.Base + 1000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := MountIDMapped(ns.Path, tc.layers, target); err != nil {
				t.Fatalf("MountIDMapped: %v", err)
			}
			t.Cleanup(func() { unix.Unmount(target, unix.MNT_DETACH) })
			for name, want := range tc.want {
				var st unix.Stat_t
				if err := unix.Stat(filepath.Join(target, name), &st); err != nil {
					t.Fatal(err)
				}
				if st.Uid != want || st.Gid != want {
					t.Errorf("%s is %d:%d on the host, want %d:%d", name, st.Uid, st.Gid, want, want)
				}
			}
			if err := os.WriteFile(filepath.Join(target, "new"), nil, 0o644); !errors.Is(err, unix.EROFS) {
				t.Errorf("writing in the root: %v, want EROFS", err)
			}
		})
	}
	target := filepath.Join(tmp, "missing")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	err = MountIDMapped(ns.Path, []string{upper, filepath.Join(tmp, "gone")}, target)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing layer: %v, want it not to exist", err)
	}
	if err := unix.Unmount(target, unix.MNT_DETACH); !errors.Is(err, unix.EINVAL) {
		t.Errorf("a missing layer left a mount (unmount: %v)", err)
	}
}

// TestProbe: doctor's probe makes a namespace and an idmapped root and
// leaves neither.
func TestProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	tmp := t.TempDir()
	o := Options{Dir: filepath.Join(tmp, "leases"), Range: Range{Start: 3 << 30, Count: Size}}
	detail, err := Probe(o, tmp)
	if err != nil || !strings.Contains(detail, "idmapped root") {
		t.Fatalf("Probe = %q, %v; want an idmapped root", detail, err)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if e.Name() != "leases" {
			t.Errorf("%s left in %s", e.Name(), tmp)
		}
	}
}
