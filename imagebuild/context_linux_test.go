package imagebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyKeepsLinks: E2B's copy('folder/*') (keepLinks) copies each
// symlink it matches as a symlink, relative, absolute or dangling, as
// copy('folder') copies the links below it; Docker's COPY (not keepLinks)
// follows a matched link beneath the context and refuses one leading out.
func TestCopyKeepsLinks(t *testing.T) {
	ctx := t.TempDir()
	folder := filepath.Join(ctx, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "test.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"rel.txt": "test.txt", "abs.txt": "/etc/passwd", "dangling.txt": "12345test.txt"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(folder, name)); err != nil {
			t.Fatal(err)
		}
	}
	srcs, wild, err := expandSources(ctx, []string{"folder/*"})
	if err != nil || !wild || len(srcs) != 4 {
		t.Fatalf("folder/*: %v %v %v, want 4 matches", srcs, wild, err)
	}
	root := t.TempDir()
	w, err := openRoot(root, 0, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := w.copySources(ctx, srcs, "/app/folder", true, true); err != nil {
		t.Fatalf("copy keeping links: %v", err)
	}
	for name, target := range links {
		if got, err := os.Readlink(filepath.Join(root, "app/folder", name)); err != nil || got != target {
			t.Errorf("%s: %q %v, want a link to %q", name, got, err, target)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "app/folder/test.txt")); err != nil || string(b) != "hello" {
		t.Errorf("test.txt: %q %v", b, err)
	}
	keep, err := hashSources(ctx, srcs, true)
	if err != nil {
		t.Fatal(err)
	}
	// Docker's way: a matched link is followed, one out of the context
	// refused.
	if err := w.copySources(ctx, []string{"folder/rel.txt"}, "/docker/", true, false); err != nil {
		t.Fatalf("COPY of a link beneath the context: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "docker/rel.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("COPY of a link: %v %v, want its target's file", fi, err)
	}
	if err := w.copySources(ctx, []string{"folder/abs.txt"}, "/docker/", true, false); err == nil || !strings.Contains(err.Error(), ErrOutsideContext.Error()) {
		t.Errorf("COPY of a link out of the context: %v, want %v", err, ErrOutsideContext)
	}
	if follow, _ := hashSources(ctx, []string{"folder/test.txt", "folder/rel.txt"}, false); follow == keep {
		t.Error("the cache key does not tell links kept from links followed")
	}
}
