package boxer_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// maxTrackedSize is the largest file git may track: source, docs, test
// data and small fixtures fit well under it; a build output does not.
const maxTrackedSize = 1 << 20

// TestNoLargeTrackedFiles fails on any tracked file over 1 MiB: a binary
// or other build output committed by mistake, which every clone would
// download from then on.
func TestNoLargeTrackedFiles(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range bytes.Split(out, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		fi, err := os.Lstat(string(name))
		if os.IsNotExist(err) {
			continue // removed in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxTrackedSize {
			t.Errorf("%s is tracked and %d bytes (over %d): build outputs and binaries stay out of git (git rm --cached %s, and add it to .gitignore)", name, fi.Size(), maxTrackedSize, name)
		}
	}
}
