package sessionfs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
	"golang.org/x/sys/unix"
)

// testFiles is Files over a fresh directory on tmpfs (a session's files
// are a tmpfs), with the three roots, as the host's root sees them.
func testFiles(t *testing.T) (*Files, string) {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "sessionfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, r := range Roots {
		if err := os.MkdirAll(filepath.Join(dir, r.Dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &Files{files: root}, dir
}

func mustParse(t *testing.T, p string) Path {
	t.Helper()
	sp, err := Parse(contract.FieldPath, p)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestMeta: a file's metadata is set, read back by stat, list and a move,
// dropped by a new write or an empty set; what the sandbox sets itself as
// user.e2b.* is read back within bounds; what is not a regular file, or
// not metadata, takes none.
func TestMeta(t *testing.T) {
	f, dir := testFiles(t)
	p := mustParse(t, "/workspace/a.txt")
	if _, err := f.Write(p, strings.NewReader("one")); err != nil {
		t.Fatal(err)
	}
	md := map[string]string{"author": "mish", "purpose": "up load"}
	e, err := f.SetMeta(p, md)
	if err != nil || !maps.Equal(e.Metadata, md) {
		t.Fatalf("SetMeta: %+v, %v", e, err)
	}
	if e, err := f.Stat(p); err != nil || !maps.Equal(e.Metadata, md) {
		t.Errorf("Stat: %v, %v", e.Metadata, err)
	}
	if es, err := f.List(mustParse(t, "/workspace"), 1); err != nil || len(es) != 1 || !maps.Equal(es[0].Metadata, md) {
		t.Errorf("List: %+v, %v", es, err)
	}
	moved := mustParse(t, "/tmp/b.txt")
	if e, err := f.Move(p, moved); err != nil || !maps.Equal(e.Metadata, md) {
		t.Errorf("Move: %v, %v", e.Metadata, err)
	}
	if e, err := f.SetMeta(moved, map[string]string{"stage": "two"}); err != nil || !maps.Equal(e.Metadata, map[string]string{"stage": "two"}) {
		t.Errorf("SetMeta again replaces: %v, %v", e.Metadata, err)
	}
	if e, err := f.Write(moved, strings.NewReader("new")); err != nil || e.Metadata != nil {
		t.Errorf("a new write keeps %v, %v", e.Metadata, err)
	}
	f.SetMeta(moved, md)
	if e, err := f.SetMeta(moved, nil); err != nil || e.Metadata != nil {
		t.Errorf("an empty set keeps %v, %v", e.Metadata, err)
	}

	// Set by the sandbox: other names are not metadata; a value too long
	// is left out, and so are keys past the bound.
	host := filepath.Join(dir, "tmp", "b.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unix.Setxattr(host, "user.e2b.author", []byte("mish"), 0))
	must(unix.Setxattr(host, "user.other", []byte("x"), 0))
	must(unix.Setxattr(host, "user.e2b.long", []byte(strings.Repeat("x", contract.MaxMetaValueLen+1)), 0))
	if e, _ := f.Stat(moved); !maps.Equal(e.Metadata, map[string]string{"author": "mish"}) {
		t.Errorf("set inside: %v, want author only", e.Metadata)
	}
	for i := range 100 {
		must(unix.Setxattr(host, fmt.Sprintf("user.e2b.k%03d", i), []byte("v"), 0))
	}
	if e, _ := f.Stat(moved); len(e.Metadata) != contract.MaxMetaKeys {
		t.Errorf("100 keys set inside: %d read back, want %d", len(e.Metadata), contract.MaxMetaKeys)
	}
	// A new write drops what the sandbox set too, but other names.
	f.Write(moved, strings.NewReader("again"))
	if e, _ := f.Stat(moved); e.Metadata != nil {
		t.Errorf("after a write: %v", e.Metadata)
	}
	if n, err := unix.Getxattr(host, "user.other", make([]byte, 8)); err != nil || n != 1 {
		t.Errorf("user.other after a write: %d, %v", n, err)
	}

	// Refused: bad metadata, before anything; a FIFO; a directory.
	for _, bad := range []map[string]string{{"bad key": "v"}, {"": "v"}, {"k": "bad\nvalue"}, {"k": "é"}, {strings.Repeat("k", 129): "v"}} {
		var fe *contract.FieldError
		if _, err := f.SetMeta(moved, bad); !errors.As(err, &fe) || fe.Field != "metadata" {
			t.Errorf("SetMeta(%q): %v, want a FieldError naming metadata", bad, err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(dir, "tmp", "fifo"), 0o644))
	if _, err := f.SetMeta(mustParse(t, "/tmp/fifo"), md); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("SetMeta on a FIFO: %v", err)
	}
	if e, err := f.Stat(mustParse(t, "/tmp/fifo")); err != nil || e.Metadata != nil {
		t.Errorf("Stat of a FIFO: %+v, %v", e, err)
	}
	if _, err := f.SetMeta(mustParse(t, "/tmp"), md); err == nil {
		t.Error("SetMeta on a directory: no error")
	}
}
