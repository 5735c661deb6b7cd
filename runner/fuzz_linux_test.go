package runner

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"golang.org/x/sys/unix"
)

// Bounds on the trees FuzzCopyTree builds, so that one input stays cheap.
const (
	fuzzMaxEntries  = 64
	fuzzMaxFileSize = 1 << 16
)

// FuzzCopyTree builds a tree from its input (one entry a line, fields split
// by tabs: "f NAME SIZE [MODE]" a file, "d NAME [MODE]" a directory,
// "l NAME TARGET" a symlink, "p NAME" a FIFO, "h NAME FILE" a hard link),
// then copies it in as a run's workspace, copies it out as a hostile
// workspace, and returns files from it with small caps. Nothing panics,
// copy-in refuses with a *FieldError or copies the tree exactly, owned by
// the user and without setuid bits; copy-out and the returned files hold
// regular files and directories only, with the source's bytes, within the
// caps; no symlink is followed and nothing outside the destinations moves.
func FuzzCopyTree(f *testing.F) {
	if os.Geteuid() != 0 {
		f.Skip("copy-in chowns to the run's user: needs root")
	}
	for _, s := range []struct {
		tree   string
		globs  string
		budget int64
		uid    uint32
	}{
		{"d\tsrc\nf\tsrc/main.py\t20\nf\tdata.csv\t100\t0644\nf\trun.sh\t10\t0755", "*.csv\nsrc/*", 1 << 20, 65534},
		{"d\ta\nd\ta/b\t0700\nf\ta/b/c\t5\nl\ta/link\tb/c\nl\tup\ta/..", "*\n*/*/*", 4, 1000},
		{"f\tsetuid\t3\t04755\nd\tsticky\t01777\nf\tgroup\t1\t02755", "*", 1 << 10, 0},
		{"l\tescape\t../../etc/passwd", "*", 1 << 10, 65534},
		{"l\tabs\t/etc/passwd\nf\tabs.png\t8", "abs*", 1 << 10, 65534},
		{"d\td\nl\td/l1\t..\nl\tl2\td/l1/../..", "*", 1 << 10, 65534},
		{"p\tfifo\nf\tok\t1", "*", 1 << 10, 65534},
		{"f\tbig\t65536\nf\tsmall\t1\nh\thard\tsmall", "*", 100, 65534},
		{"f\tnl\nname\t1\nf\t\xff\xfe\t2\nf\t..\t1\nf\t/abs\t1\nd\ta/../b", "*", 1 << 10, 65534},
		{"f\tx\t1", "[", 1 << 10, math.MaxUint32},
		{"", "", 0, 0},
	} {
		f.Add(s.tree, s.globs, s.budget, s.uid)
	}
	f.Fuzz(func(t *testing.T, tree, globs string, budget int64, uid uint32) {
		if uid == math.MaxUint32 {
			// (uid_t)-1 is "no change" to chown; Normalize refuses it.
			if _, err := (contract.Request{Lang: "bash", UID: uid, GID: uid, UserSet: true}).Normalize(); err == nil {
				t.Fatalf("Normalize accepts user %d:%d, which chown reads as no user", uid, uid)
			}
			return
		}
		tmp := t.TempDir()
		src, ws, out, outside := filepath.Join(tmp, "src"), filepath.Join(tmp, "ws"), filepath.Join(tmp, "out"), filepath.Join(tmp, "outside")
		for _, d := range []string{src, ws, out, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A destination may hold links already: writes must not go
		// through them.
		for name, target := range map[string]string{"escape": "../outside", "escape-abs": outside} {
			if err := os.Symlink(target, filepath.Join(out, name)); err != nil {
				t.Fatal(err)
			}
		}
		buildTree(t, src, tree)
		before := snapshot(t, tmp, "ws", "out")
		srcBefore := snapshot(t, src)

		err := box.CopyIn(src, ws, budget, uid, uid)
		if err != nil {
			var fe *contract.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("copyIn = %v (%T): a tree it refuses is a *FieldError", err, err)
			}
		} else {
			checkCopiedIn(t, src, ws, uid)
		}

		files, skipped, err := box.CopyOut(src, out, budget)
		if err != nil {
			t.Fatalf("copyOut = %v: only a full disk fails it", err)
		}
		checkCopiedOut(t, src, out, files, skipped, budget)

		returned := box.ReturnFiles(src, lines(globs), max(budget, 0))
		checkReturned(t, src, returned, lines(globs), max(budget, 0))

		if got := snapshot(t, tmp, "ws", "out"); got != before {
			t.Fatalf("something outside the destinations changed:\nbefore:\n%s\nafter:\n%s", before, got)
		}
		if got := snapshot(t, src); got != srcBefore {
			t.Fatalf("the source changed:\nbefore:\n%s\nafter:\n%s", srcBefore, got)
		}
	})
}

// buildTree makes the entries tree describes under dir, skipping those
// whose name leaves dir or whose parent is not a plain directory (the
// setup must not follow a link out of the test's own directory).
func buildTree(t *testing.T, dir, tree string) {
	t.Helper()
	files := map[string]bool{}
	for i, line := range lines(tree) {
		if i >= fuzzMaxEntries {
			break
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 2 || !filepath.IsLocal(fields[1]) || strings.ContainsRune(fields[1], 0) {
			continue
		}
		name := filepath.Clean(fields[1])
		arg := func(i int) string {
			if i < len(fields) {
				return fields[i]
			}
			return ""
		}
		if !plainParents(t, dir, name) {
			continue
		}
		// An entry the input describes badly (an empty link target, a
		// name too long) is left out.
		p := filepath.Join(dir, name)
		switch fields[0] {
		case "f":
			size, _ := strconv.Atoi(arg(2))
			size = min(max(size, 0), fuzzMaxFileSize)
			if os.WriteFile(p, content(name, size), 0o644) == nil {
				files[name] = true
				if arg(3) != "" {
					chmod(p, arg(3))
				}
			}
		case "d":
			if os.Mkdir(p, 0o755) == nil && arg(2) != "" {
				chmod(p, arg(2))
			}
		case "l":
			_ = os.Symlink(arg(2), p)
		case "p":
			_ = unix.Mkfifo(p, 0o644)
		case "h":
			if target := filepath.Clean(arg(2)); files[target] {
				_ = os.Link(filepath.Join(dir, target), p)
			}
		}
	}
}

// plainParents makes the directories above name, and reports false if one
// of them is there already as something else (a symlink included).
func plainParents(t *testing.T, dir, name string) bool {
	t.Helper()
	parent := dir
	parts := strings.Split(filepath.Dir(name), string(filepath.Separator))
	for _, part := range parts {
		if part == "." {
			continue
		}
		parent = filepath.Join(parent, part)
		st, err := os.Lstat(parent)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if os.Mkdir(parent, 0o755) != nil {
				return false
			}
		case err != nil:
			return false
		case !st.IsDir():
			return false
		}
	}
	return true
}

// chmod sets the octal mode, if it is one: permissions, setuid, setgid,
// sticky.
func chmod(p, mode string) {
	if m, err := strconv.ParseUint(mode, 8, 32); err == nil {
		_ = unix.Chmod(p, uint32(m)&0o7777)
	}
}

// content is a file's bytes: its name, repeated, so that files differ.
func content(name string, size int) []byte {
	return bytes.Repeat([]byte(name+"\n"), size/(len(name)+1)+1)[:size]
}

// snapshot lists the tree under dir (its entries' paths, types, modes,
// owners and contents), leaving out the top-level entries named in skip.
func snapshot(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range skip {
			if rel == s {
				return fs.SkipDir
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		b.WriteString(strconv.Quote(rel) + " " + info.Mode().String() + " " + strconv.Itoa(int(st.Uid)) + ":" + strconv.Itoa(int(st.Gid)))
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + strconv.Quote(string(data)))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.WriteString(" -> " + strconv.Quote(target))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	return b.String()
}

// checkCopiedIn: the workspace holds the source's entries, of the same
// types and contents, owned by uid, with permission bits only.
func checkCopiedIn(t *testing.T, src, ws string, uid uint32) {
	t.Helper()
	count := func(dir string) int {
		n := 0
		_ = filepath.WalkDir(dir, func(string, fs.DirEntry, error) error { n++; return nil })
		return n
	}
	if a, b := count(src), count(ws); a != b {
		t.Fatalf("copied in %d entries of %d", b-1, a-1)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		want, _ := os.Lstat(p)
		got, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil {
			t.Fatalf("%s not copied in: %v", rel, err)
		}
		if got.Mode().Type() != want.Mode().Type() {
			t.Fatalf("%s copied in as %v, was %v", rel, got.Mode().Type(), want.Mode().Type())
		}
		if got.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			t.Fatalf("%s copied in with mode %v: permission bits only", rel, got.Mode())
		}
		if st := got.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != uid {
			t.Fatalf("%s copied in owned by %d:%d, want %d:%d", rel, st.Uid, st.Gid, uid, uid)
		}
		switch {
		case want.Mode().IsRegular():
			a, _ := os.ReadFile(p)
			b, _ := os.ReadFile(filepath.Join(ws, rel))
			if !bytes.Equal(a, b) {
				t.Fatalf("%s copied in as %q, was %q", rel, b, a)
			}
		case want.Mode()&fs.ModeSymlink != 0:
			a, _ := os.Readlink(p)
			b, _ := os.Readlink(filepath.Join(ws, rel))
			if a != b || filepath.IsAbs(a) || !filepath.IsLocal(filepath.Join(filepath.Dir(rel), a)) {
				t.Fatalf("symlink %s copied in to %q, was %q: only links inside the tree are", rel, b, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkCopiedOut: out holds directories and the regular files listed,
// each with its source's bytes, within budget, and the links it held
// before; every source entry was copied or counted as skipped.
func checkCopiedOut(t *testing.T, src, out string, files []contract.File, skipped int, budget int64) {
	t.Helper()
	listed := map[string]contract.File{}
	var total int64
	for _, f := range files {
		if !filepath.IsLocal(f.Path) {
			t.Fatalf("copied out %q: not a path inside the destination", f.Path)
		}
		listed[f.Path] = f
		total += f.Size
	}
	if total > max(budget, 0) {
		t.Fatalf("copied out %d bytes, over the budget of %d", total, budget)
	}
	dirs := 0
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		switch {
		case rel == ".":
		case rel == "escape" || rel == "escape-abs":
			if d.Type()&fs.ModeSymlink == 0 {
				t.Fatalf("%s was replaced by %v", rel, d.Type())
			}
		case d.IsDir():
			if st, err := os.Lstat(filepath.Join(src, rel)); err != nil || !st.IsDir() {
				t.Fatalf("copied out directory %s, which the source does not have", rel)
			}
			dirs++
		case d.Type().IsRegular():
			f, ok := listed[rel]
			if !ok {
				t.Fatalf("copied out %s without listing it", rel)
			}
			st, err := os.Lstat(filepath.Join(src, rel))
			if err != nil || !st.Mode().IsRegular() {
				t.Fatalf("copied out %s, which is not a regular file in the source", rel)
			}
			a, _ := os.ReadFile(filepath.Join(src, rel))
			b, _ := os.ReadFile(p)
			if !bytes.Equal(a, b) || int64(len(b)) != f.Size {
				t.Fatalf("copied out %s as %d bytes %q, listed %d, was %q", rel, len(b), b, f.Size, a)
			}
			delete(listed, rel)
		default:
			t.Fatalf("copied out %s of type %v: regular files and directories only", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) > 0 {
		t.Fatalf("listed files that are not there: %v", listed)
	}
	entries := -1
	_ = filepath.WalkDir(src, func(string, fs.DirEntry, error) error { entries++; return nil })
	// A source directory named like a link the destination held is
	// skipped whole, its entries uncounted.
	if got := dirs + len(files) + skipped; got != entries && !hasEntry(src, "escape", "escape-abs") {
		t.Fatalf("%d directories + %d files + %d skipped, of %d entries", dirs, len(files), skipped, entries)
	}
}

func hasEntry(dir string, names ...string) bool {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// checkReturned: regular files only, matching a glob, with their source's
// bytes, within budget; a file that did not fit has no content.
func checkReturned(t *testing.T, src string, returned []contract.ReturnedFile, globs []string, budget int64) {
	t.Helper()
	var total int64
	for _, f := range returned {
		st, err := os.Lstat(filepath.Join(src, filepath.FromSlash(f.Path)))
		if err != nil || !st.Mode().IsRegular() {
			t.Fatalf("returned %s, which is not a regular file in the source", f.Path)
		}
		if ok := contract.MatchesAny(globs, f.Path); !ok || path.IsAbs(f.Path) {
			t.Fatalf("returned %s, which matches none of %q", f.Path, globs)
		}
		data, _ := os.ReadFile(filepath.Join(src, filepath.FromSlash(f.Path)))
		switch {
		case f.Truncated:
			if f.Content != nil || f.Size <= 0 {
				t.Fatalf("truncated %s: %+v", f.Path, f)
			}
		case !bytes.Equal(f.Content, data) || f.Size != int64(len(data)):
			t.Fatalf("returned %s as %q (size %d), was %q", f.Path, f.Content, f.Size, data)
		}
		total += int64(len(f.Content))
	}
	if total > budget {
		t.Fatalf("returned %d bytes, over the budget of %d", total, budget)
	}
}
