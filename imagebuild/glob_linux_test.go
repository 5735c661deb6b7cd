package imagebuild

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExpandSources: a wildcard source is the context's paths it matches,
// sorted, inside the context only; a plain source is left as it is; a
// pattern that matches nothing, or leaves the context, is refused.
func TestExpandSources(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	for _, p := range []string{"notes/a.md", "notes/b.md", "notes/c.txt", "src/x/main.py", "src/y/main.py"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	got, wild, err := expandSources(dir, []string{"hello.txt", "./notes/*.md", "src/*/main.py"})
	want := []string{"hello.txt", "notes/a.md", "notes/b.md", "src/x/main.py", "src/y/main.py"}
	if err != nil || !wild || !slices.Equal(got, want) {
		t.Errorf("expanded: %v %v %v, want %v", got, wild, err, want)
	}
	if got, wild, err := expandSources(dir, []string{"notes", "a b"}); err != nil || wild || !slices.Equal(got, []string{"notes", "a b"}) {
		t.Errorf("no wildcard: %v %v %v, want them as they were", got, wild, err)
	}
	for _, bad := range []struct{ src, want string }{
		{"*.none", "no file of the build context matches"},
		{"out/*.md", "no file of the build context matches"},
		{"../*", ErrOutsideContext.Error()},
		{"notes/[", "not a valid pattern"},
	} {
		if _, _, err := expandSources(dir, []string{bad.src}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.src, err, bad.want)
		}
	}
	if _, _, err := expandSources(dir, []string{"../*"}); !errors.Is(err, ErrOutsideContext) {
		t.Errorf("../*: %v, want ErrOutsideContext", err)
	}
}
