package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStdinFile(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("line one\nline two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := python(t, `import sys; print(len(sys.stdin.readlines()))`, "--stdin-file", in)
	if res.Stdout != "2\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	assertClean(t)
}

func TestCopyInOut(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(in, "data", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(in, "data", "deep", "n.txt"), []byte("41"), 0o644))
	must(t, os.WriteFile(filepath.Join(in, "setuid"), []byte("x"), 0o4755))
	must(t, os.Symlink("data/deep/n.txt", filepath.Join(in, "inside-link")))
	res, _ := python(t, `
import os
n = int(open("inside-link").read())
os.makedirs("results", exist_ok=True)
open("results/answer.txt", "w").write(str(n + 1))
st = os.stat("setuid")
print(oct(st.st_mode & 0o7777), st.st_uid)
`, "--copy-in", in, "--copy-out", out)
	if res.Stdout != "0o755 65534\n" {
		t.Errorf("stdout %q stderr %q: setuid bit must be dropped, owner the sandbox user", res.Stdout, res.Stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "results", "answer.txt"))
	if err != nil || string(data) != "42" {
		t.Errorf("answer.txt: %q %v", data, err)
	}
	got := map[string]int64{}
	for _, f := range res.FilesOut {
		got[f.Path] = f.Size
	}
	if got["results/answer.txt"] != 2 || got["data/deep/n.txt"] != 2 || len(got) != 3 {
		t.Errorf("files_out %+v", res.FilesOut)
	}
	if st, err := os.Stat(filepath.Join(out, "setuid")); err != nil || st.Mode()&os.ModeSetuid != 0 {
		t.Errorf("setuid copied back: %v %v", st, err)
	}
	assertClean(t)
}

func TestCopyInRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(dir string)
		flags []string
		want  string
	}{
		{"absolute symlink", func(d string) { must(t, os.Symlink("/etc/passwd", filepath.Join(d, "pw"))) }, nil, "points outside"},
		{"escaping symlink", func(d string) { must(t, os.Symlink("../../x", filepath.Join(d, "up"))) }, nil, "points outside"},
		{"fifo", func(d string) { must(t, syscall.Mkfifo(filepath.Join(d, "f"), 0o644)) }, nil, "special file"},
		{"too big", func(d string) { must(t, os.WriteFile(filepath.Join(d, "big"), make([]byte, 2<<20), 0o644)) }, []string{"--tmp-size", "1m"}, "raise --tmp-size"},
		{"not a dir", nil, nil, "not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := dir
			if tc.setup != nil {
				tc.setup(dir)
			} else {
				src = filepath.Join(dir, "missing")
			}
			args := append([]string{"run", "--lang", "python", "--copy-in", src}, tc.flags...)
			r := boxer(t, nil, append(args, "-c", "print(1)")...)
			if r.code != 125 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("exit %d stderr %q, want 125 and one line with %q", r.code, r.stderr, tc.want)
			}
			assertClean(t)
		})
	}
}

// TestCopyOutHostile runs a program that fills /workspace with everything a
// hostile program might leave for --copy-out: symlinks to host files and
// out of the directory, a FIFO, a huge sparse file, odd names and 100,000
// tiny files. Only regular files and directories come out, inside DIR.
func TestCopyOutHostile(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "out")
	// A symlink planted in DIR before the run must not be followed either.
	must(t, os.MkdirAll(out, 0o755))
	must(t, os.Symlink(filepath.Join(base, "victim"), filepath.Join(out, "planted")))
	res, _ := python(t, `
import os
os.symlink("/etc/passwd", "passwd")
os.symlink("../../../../etc", "up")
os.mkfifo("fifo")
with open("sparse", "wb") as f:
    f.seek(10 << 30); f.write(b"x")
open("..x", "w").write("dots")
open("new\nline", "w").write("nl")
os.mkdir("planted")
open("planted/escape", "w").write("should stay inside out/")
os.mkdir("many")
for i in range(100000):
    open("many/%d" % i, "w").close()
print("ok")
`, "--copy-out", out, "--timeout", "120s", "--memory", "512m", "--tmp-size", "256m")
	if res.Stdout != "ok\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	for _, name := range []string{"passwd", "up", "fifo", "sparse"} {
		if _, err := os.Lstat(filepath.Join(out, name)); err == nil {
			t.Errorf("%s was copied out", name)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(out, "..x")); string(data) != "dots" {
		t.Errorf("..x = %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(out, "new\nline")); string(data) != "nl" {
		t.Errorf("name with newline = %q", data)
	}
	if _, err := os.Stat(filepath.Join(base, "victim")); err == nil {
		t.Error("a write followed the planted symlink out of DIR")
	}
	entries, err := os.ReadDir(filepath.Join(out, "many"))
	if err != nil || len(entries) != 100000 {
		t.Errorf("many/: %d files, %v", len(entries), err)
	}
	if res.FilesSkipped < 4 {
		t.Errorf("files_skipped = %d, want at least the symlinks, FIFO and sparse file", res.FilesSkipped)
	}
	var total int64
	for _, f := range res.FilesOut {
		total += f.Size
	}
	if total > 256<<20 {
		t.Errorf("copied %d bytes, more than --tmp-size", total)
	}
	assertClean(t)
}

func TestCopyOutAfterTimeout(t *testing.T) {
	out := t.TempDir()
	res, _ := python(t, `
open("partial.txt", "w").write("before the timeout")
while True: pass
`, "--copy-out", out, "--timeout", "1s")
	if res.Status != "timeout" {
		t.Fatalf("status %s", res.Status)
	}
	if data, err := os.ReadFile(filepath.Join(out, "partial.txt")); err != nil || string(data) != "before the timeout" {
		t.Errorf("partial.txt: %q %v", data, err)
	}
	assertClean(t)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCopyOutFullDisk(t *testing.T) {
	out := t.TempDir()
	must(t, syscall.Mount("tmpfs", out, "tmpfs", 0, "size=1m"))
	defer syscall.Unmount(out, syscall.MNT_DETACH)
	r := boxer(t, nil, "run", "--lang", "python", "--copy-out", out, "-c", `open("big", "wb").write(b"x" * (4 << 20))`)
	if r.code != 125 || !strings.Contains(r.stderr, "no space left on device") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d stderr %q, want 125 and one line naming the full disk", r.code, r.stderr)
	}
	assertClean(t)
}
