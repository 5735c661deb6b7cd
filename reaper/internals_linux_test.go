package reaper

import (
	"strings"
	"testing"
)

// TestServesShim tells a shim's server for one sandbox from its "start"
// and "delete" commands, from other sandboxes' shims and from other
// containerds' (the sweep ends only the first).
func TestServesShim(t *testing.T) {
	const addr, ns, id = "/var/run/boxer/containerd.sock", "boxer", "bx-0123456789abcdef"
	server := []string{"/usr/local/lib/boxer/bin/containerd-shim-runc-v2", "-namespace", ns, "-id", id, "-address", addr}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{server, true},
		{append(append([]string{}, server...), "-bundle", "/x", "delete"), false},
		{append(append([]string{}, server...), "start"), false},
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", ns, "-id", "bx-other", "-address", addr}, false},
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "default", "-id", id, "-address", addr}, false},
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", ns, "-id", id, "-address", "/run/containerd/containerd.sock"}, false},
		{[]string{"runc", "--root", "/run/containerd/runc/boxer", "create", "-namespace", ns, "-id", id, "-address", addr}, false},
		{nil, false},
	} {
		if got := (process{pid: 1, args: c.args}).servesShim(addr, ns, id); got != c.want {
			t.Errorf("servesShim(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestIsTaskBundle: the sweep removes only containerd task directories of
// the sandbox it sweeps.
func TestIsTaskBundle(t *testing.T) {
	const id = "bx-0123456789abcdef"
	for dir, want := range map[string]bool{
		"/var/run/boxer/containerd/io.containerd.runtime.v2.task/boxer/" + id: true,
		"/var/lib/boxer/containerd/io.containerd.runtime.v2.task/boxer/" + id: true,
		"/var/run/boxer/containerd/io.containerd.runtime.v2.task/boxer/bx-1":  false,
		"/var/run/boxer/containerd/io.containerd.runtime.v2.task/" + id:       false,
		"/tmp/" + id: false,
		"io.containerd.runtime.v2.task/boxer/" + id: false,
		"/": false,
	} {
		if got := isTaskBundle(dir, id); got != want {
			t.Errorf("isTaskBundle(%q) = %v, want %v", dir, got, want)
		}
	}
}

// TestShimScriptAnswer: the wrapper's answer to "delete" is what
// containerd reads as a task.v2 DeleteResponse with exit status 255 (the
// bytes an earlier boxer hand-wrote: field 2, varint 255).
func TestShimScriptAnswer(t *testing.T) {
	if got, want := printfOctal(nothingDeleted()), `\020\377\001`; got != want {
		t.Errorf("answer = %s, want %s", got, want)
	}
	script := ShimScript("/opt/it's/shim")
	for _, want := range []string{`shim='/opt/it'\''s/shim'`, `root='/run/containerd/runc'`, `printf '\020\377\001'`} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
}
