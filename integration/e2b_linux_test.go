package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// E2B's SDKs against boxer serve's E2B listener: each test is a node
// script using the real e2b and @e2b/code-interpreter packages of the
// repository's package-lock.json.

// e2bServer is a boxer serve with an E2B listener and two API keys.
type e2bServer struct {
	*server
	// api is the E2B listener's URL (E2B_API_URL and E2B_SANDBOX_URL).
	api  string
	keys [2]string
	// args start another server as this one (restart).
	args []string
}

func newE2BKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "e2b_" + hex.EncodeToString(b)
}

// startE2B runs boxer serve with --e2b-listen and two keys, with flags
// ($PORT in a flag is the E2B listener's port).
func startE2B(t *testing.T, flags ...string) *e2bServer {
	t.Helper()
	e := &e2bServer{keys: [2]string{newE2BKey(t), newE2BKey(t)}}
	keyFile := filepath.Join(t.TempDir(), "e2b-keys")
	must(t, os.WriteFile(keyFile, []byte("# test keys\n"+e.keys[0]+"\n"+e.keys[1]+"\n"), 0o600))
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	e.api = "http://" + addr
	args := []string{"--e2b-listen", addr, "--e2b-key-file", keyFile}
	for _, f := range flags {
		args = append(args, strings.ReplaceAll(f, "$PORT", strconv.Itoa(port)))
	}
	e.args = args
	e.server = startServer(t, args...)
	return e
}

// repoRoot is where node_modules is: node resolves the scripts' imports
// from there.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "e2b", "package.json")); err != nil {
		t.Fatalf("the E2B SDKs are not installed (%v): run 'make test-deps' (npm ci)", err)
	}
	return root
}

// node runs script, an ES module, with the SDKs pointed at e and key as
// E2B_API_KEY, env on top; it fails the test on a nonzero exit and
// returns the script's standard output.
func (e *e2bServer) node(t *testing.T, key, script string, env ...string) string {
	t.Helper()
	out, errOut, err := e.nodeRun(t, key, script, env...)
	if err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s", err, out, errOut, e.log)
	}
	return out
}

// nodeRun is node without the verdict.
func (e *e2bServer) nodeRun(t *testing.T, key, script string, env ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "E2B_API_KEY="+key)
	// With E2B_DOMAIN the SDKs find the server by host names instead.
	if !slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "E2B_DOMAIN=") }) {
		cmd.Env = append(cmd.Env, "E2B_API_URL="+e.api, "E2B_SANDBOX_URL="+e.api)
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// lines are the script's output lines, trimmed.
func lines(s string) []string {
	return strings.Split(strings.TrimSpace(s), "\n")
}
