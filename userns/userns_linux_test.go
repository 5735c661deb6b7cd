package userns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMake makes two namespaces at once: each owned by its block's first
// id, mapping 0-65535 onto its block, and gone with its lease on Remove.
func TestMake(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	tmp := t.TempDir()
	o := Options{Dir: filepath.Join(tmp, "leases"), Range: Range{Start: 3 << 30, Count: 2 * Size}}
	var all []*NS
	for i := range 2 {
		run := filepath.Join(tmp, "run"+string(rune('a'+i)))
		if err := os.Mkdir(run, 0o700); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ns, err := Make(o, run, filepath.Join(run, "userns"), "")
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
