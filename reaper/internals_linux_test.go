package reaper

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
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

// TestRunscDebrisIDs finds the containers runsc left a lock or a control
// socket of without a state file, old enough, and nothing else; and
// runscStateIDs those of boxer's with an old enough state file.
func TestRunscDebrisIDs(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-2 * debrisAge)
	files := map[string]bool{ // name: made old
		"bx-lone_sandbox:bx-lone.lock":   true, // debris
		"runsc-bx-lone.sock":             true,
		"runsc-bx-sockonly.sock":         true, // debris: the socket alone
		"bx-live_sandbox:bx-live.lock":   true, // a state beside it: a container
		"bx-live_sandbox:bx-live.state":  true,
		"runsc-bx-live.sock":             true,
		"bx-young_sandbox:bx-young.lock": false, // too young
		"bx-runc":                        true,  // runc's, not runsc's
		"bx-new_sandbox:bx-new.state":    false, // a state too young
		"other_sandbox:other.state":      true,  // not boxer's
	}
	for name, aged := range files {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if aged {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := runscStateIDs(root, debrisAge), []string{"bx-live"}; !slices.Equal(got, want) {
		t.Errorf("runscStateIDs = %q, want %q", got, want)
	}
	got := runscDebrisIDs(root, debrisAge)
	sort.Strings(got)
	if want := []string{"bx-lone", "bx-sockonly"}; !slices.Equal(got, want) {
		t.Errorf("runscDebrisIDs = %q, want %q", got, want)
	}
	if d := runscDebris(root, "bx-lone"); len(d) != 2 {
		t.Errorf("runscDebris(bx-lone) = %q, want its lock and socket", d)
	}
	if d := runscDebris(root, "bx-live"); len(d) != 0 {
		t.Errorf("runscDebris(bx-live) = %q, want none: it has a state", d)
	}
}
