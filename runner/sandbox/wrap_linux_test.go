package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/reaper"
	"golang.org/x/sys/unix"
)

// buildWrap builds boxer-wrap from this checkout, as 'make build' does.
func buildWrap(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), WrapName)
	if out, err := exec.Command("musl-gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", bin, "../../init/boxer-wrap.c").CombinedOutput(); err != nil {
		t.Fatalf("building boxer-wrap: %v: %s", err, out)
	}
	return bin
}

// writeWrapper writes a wrapper file for boxer-wrap at wrap into dir.
func writeWrapper(t *testing.T, wrap, dir, name string, directives ...string) string {
	t.Helper()
	content, ok := WrapFile(wrap, "a test's wrapper.", directives...)
	if !ok {
		t.Fatalf("wrapFile(%q) refused", directives)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWrapRuntime: a wrapper of runc or runsc sets the rlimits and puts
// the arguments it names before the caller's, as the shell scripts did.
func TestWrapRuntime(t *testing.T) {
	wrap := buildWrap(t)
	w := writeWrapper(t, wrap, t.TempDir(), "runtime",
		"rlimit-core 0", "rlimit-nofile 77", "arg -c", `arg echo "$0|$*"; ulimit -c; ulimit -n`, "exec sh")
	out, err := exec.Command(w, "first", "second one", "--root", "/x").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := string(out), "first|second one --root /x\n0\n77\n"; got != want {
		t.Errorf("wrapper printed %q, want %q", got, want)
	}
	if _, ok := WrapFile(wrap, "x", "arg a\nexec b"); ok {
		t.Error("wrapFile took a directive with a newline")
	}
}

// TestWrapShimDelete: the shim's wrapper answers containerd's redundant
// "delete" itself only when the runtime keeps nothing of the task and its
// rootfs is not mounted; everything else goes to the real shim.
func TestWrapShimDelete(t *testing.T) {
	wrap := buildWrap(t)
	dir := t.TempDir()
	real := filepath.Join(dir, "real-shim")
	if err := os.WriteFile(real, []byte("#!/bin/sh\necho real \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "runc")
	var directives []string
	for _, d := range reaper.ShimWrap(real) {
		if strings.HasPrefix(d, "delete-root ") {
			d = "delete-root " + root
		}
		directives = append(directives, d)
	}
	shim := writeWrapper(t, wrap, dir, "shim", directives...)
	const ns, id = "boxer", "bx-0123456789abcdef"
	answer := []byte{0o20, 0o377, 0o1} // task.v3 DeleteResponse{ExitStatus: 255}
	run := func(bundle string, action string) []byte {
		t.Helper()
		cmd := exec.Command(shim, "-namespace", ns, "-address", "/run/x.sock", "-id", id, "-bundle", bundle, action)
		cmd.Dir = bundle
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", shim, action, err, out)
		}
		return out
	}
	isReal := func(out []byte) bool { return bytes.HasPrefix(out, []byte("real -namespace")) }
	bundle := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := run(bundle, "delete"); !bytes.Equal(out, answer) {
		t.Errorf("delete with nothing left: %q, want the answer %q", out, answer)
	}
	if out := run(bundle, "start"); !isReal(out) {
		t.Errorf("start: %q, want the real shim", out)
	}
	// runc's state directory, then runsc's state file, name the task.
	for _, left := range []string{id, "bx-sb_sandbox:" + id + ".state"} {
		p := filepath.Join(root, ns, left)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if out := run(bundle, "delete"); !isReal(out) {
			t.Errorf("delete with %s left: %q, want the real shim", left, out)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("tmpfs", filepath.Join(bundle, "rootfs"), "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	out := run(bundle, "delete")
	if err := unix.Unmount(filepath.Join(bundle, "rootfs"), 0); err != nil {
		t.Fatal(err)
	}
	if !isReal(out) {
		t.Errorf("delete with the rootfs mounted: %q, want the real shim", out)
	}
	// A bundle's path that mountinfo would escape cannot be checked.
	spaced := filepath.Join(dir, "a bundle")
	if err := os.Mkdir(spaced, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := run(spaced, "delete"); !isReal(out) {
		t.Errorf("delete in %q: %q, want the real shim", spaced, out)
	}
	if out := run(bundle, "delete"); !bytes.Equal(out, answer) {
		t.Errorf("delete with nothing left again: %q, want the answer %q", out, answer)
	}
}
