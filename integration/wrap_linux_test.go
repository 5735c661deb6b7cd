package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
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
	// The makers of user namespaces (userns.Options.Hold) are boxer-wrap's too.
	for _, p := range append(userns, filepath.Join(stateDir, "shim"), filepath.Join(stateDir, "runsc"),
		filepath.Join(stateDir, "userns-hold"), filepath.Join(stateDir, "userns-hold-net")) {
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
	// runc's start and delete are boxer-wrap's (runner.TestWrapRuncFast).
	if data, err := os.ReadFile(userns[0]); err != nil || !strings.Contains(string(data), "\nrunc-fast start-delete\n") {
		t.Errorf("%s: %q %v, want runc-fast", userns[0], data, err)
	}
}

// TestServeRewritesWrappers: a server makes each sandbox through the
// wrappers it knows to work, even when another boxer on the same state
// directory (another build, its boxer-wrap elsewhere, since removed) wrote
// its own in between.
func TestServeRewritesWrappers(t *testing.T) {
	s := startServer(t, "--warm", "", "--shared-shims", "0")
	want := "#!" + filepath.Join(filepath.Dir(boxerBin), "boxer-wrap") + "\n"
	userns, _ := filepath.Glob(filepath.Join(stateDir, "runc-userns-*"))
	files := append(userns, filepath.Join(stateDir, "shim"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		gone := strings.Replace(string(data), want, "#!/nonexistent/boxer-wrap\n", 1)
		if err := os.WriteFile(p, []byte(gone), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, _, body := s.post(t, `{"lang":"python","code":"print(6 * 7)"}`)
	if code != 200 || !strings.Contains(string(body), `"stdout":"42\n"`) {
		t.Errorf("POST /v1/runs through another build's wrappers: %d %s", code, body)
	}
	for _, p := range files {
		if data, err := os.ReadFile(p); err != nil || !strings.HasPrefix(string(data), want) {
			t.Errorf("%s after the run: %q %v, want it to start %q", p, data, err, want)
		}
	}
}
