package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// TestRuntimeWrappers: the wrappers containerd and its shim run on every
// sandbox's path (the runc shim's, runsc's, runc's in a user namespace)
// are boxer-wrap's files, not shell scripts, on runc and runsc, and the
// runs through them keep their result.
func TestRuntimeWrappers(t *testing.T) {
	want := "#!" + filepath.Join(filepath.Dir(boxerBin), "boxer-wrap")
	for _, rt := range []string{"runc", "runsc"} {
		res, r := python(t, "print(6 * 7)", "--runtime", rt)
		if r.code != 0 || res.Stdout != "42\n" {
			t.Fatalf("%s: exit %d, result %+v", rt, r.code, res)
		}
	}
	userns, _ := filepath.Glob(filepath.Join(stateDir, "runc-userns-*"))
	if len(userns) != 1 {
		t.Fatalf("runc-userns wrappers in %s: %q, want one", stateDir, userns)
	}
	for _, p := range append(userns, filepath.Join(stateDir, "shim"), filepath.Join(stateDir, "runsc")) {
		f, err := os.Open(p)
		if err != nil {
			t.Error(err)
			continue
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		if line != want+"\n" {
			t.Errorf("%s starts %q, want %q", p, line, want)
		}
	}
}
