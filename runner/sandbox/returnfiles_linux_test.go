package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
	"golang.org/x/sys/unix"
)

// TestReturnFiles: globs pick regular files only, symlinks are never
// followed, special files are skipped, and the cap truncates what does not
// fit.
func TestReturnFiles(t *testing.T) {
	dir := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 100)...)
	for name, data := range map[string][]byte{
		"plot.png":       png,
		"big.png":        bytes.Repeat([]byte{2}, 5000),
		"notes.txt":      []byte("hello"),
		"out/a.csv":      []byte("a,b\n1,2\n"),
		"out/deep/b.csv": []byte("x"),
		"data.bin":       {0, 1, 2, 3},
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.png")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ReturnFiles(dir, []string{"*.png", "out/*.csv", "*.bin"}, 1000)
	byPath := map[string]contract.ReturnedFile{}
	for _, f := range got {
		byPath[f.Path] = f
	}
	if len(got) != 4 {
		t.Errorf("got %d files, want big.png, plot.png, out/a.csv, data.bin: %+v", len(got), got)
	}
	if f := byPath["plot.png"]; !bytes.Equal(f.Content, png) || f.MediaType != "image/png" || f.Size != int64(len(png)) || f.Truncated {
		t.Errorf("plot.png: %+v", f)
	}
	if f := byPath["big.png"]; f.Content != nil || !f.Truncated || f.Size != 5000 || f.MediaType != "image/png" {
		t.Errorf("big.png over the cap: %+v", f)
	}
	if f := byPath["out/a.csv"]; string(f.Content) != "a,b\n1,2\n" || f.MediaType != "text/csv; charset=utf-8" {
		t.Errorf("out/a.csv: %+v", f)
	}
	if f := byPath["data.bin"]; !bytes.Equal(f.Content, []byte{0, 1, 2, 3}) || f.MediaType != "application/octet-stream" {
		t.Errorf("data.bin: %+v", f)
	}
	for _, p := range []string{"link.png", "fifo.png", "out/deep/b.csv", "notes.txt"} {
		if _, ok := byPath[p]; ok {
			t.Errorf("%s returned", p)
		}
	}
}

func TestCheckReturnFiles(t *testing.T) {
	for _, tc := range []struct {
		globs []string
		ok    bool
	}{
		{[]string{"*.png", "out/*.csv"}, true},
		{[]string{"../x"}, false},
		{[]string{"/etc/passwd"}, false},
		{[]string{"[a-"}, false},
		{[]string{""}, false},
	} {
		_, err := contract.Request{Lang: "python", Code: []byte("1"), ReturnFiles: tc.globs}.Normalize()
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.globs, err)
		}
	}
}
