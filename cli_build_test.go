package boxer_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cliTags are the tags make build builds the CLI, bin/boxer, with.
const cliTags = "urfave_cli_no_docs grpcnotrace boxer_cli"

// TestCLIImports keeps out of the CLI (make build's bin/boxer) the packages
// that only boxer serve and boxer mcp use: every CLI run pays for the
// package initialisation of all the binary links, before main.
func TestCLIImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", cliTags, "-deps", "./cmd/boxer").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, bad := range []string{
			"github.com/boxer-dev/boxer/server", "github.com/boxer-dev/boxer/e2b", "github.com/boxer-dev/boxer/fleet",
			"github.com/prometheus/", "github.com/modelcontextprotocol/", "connectrpc.com/",
			"github.com/russross/blackfriday", "golang.org/x/net/trace",
		} {
			if d == bad || strings.HasPrefix(d, bad+"/") || strings.HasSuffix(bad, "/") && strings.HasPrefix(d, bad) {
				t.Errorf("the CLI imports %s", d)
			}
		}
	}
}

// TestCLIRunsServer: the CLI's boxer serve and boxer mcp are
// boxer-server's, found beside it, their flags and help included.
func TestCLIRunsServer(t *testing.T) {
	dir := t.TempDir()
	for bin, tags := range map[string]string{"boxer": cliTags, "boxer-server": "urfave_cli_no_docs grpcnotrace"} {
		if out, err := exec.Command("go", "build", "-tags", tags, "-o", filepath.Join(dir, bin), "./cmd/boxer").CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", bin, err, out)
		}
	}
	for cmd, want := range map[string]string{"serve": "--public-health", "mcp": "--max-timeout"} {
		out, err := exec.Command(filepath.Join(dir, "boxer"), "--namespace", "x", cmd, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "boxer "+cmd+" - ") || !strings.Contains(string(out), want) {
			t.Errorf("boxer %s --help: %v\n%s", cmd, err, out)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "boxer"), "serve", "--no-such-flag").CombinedOutput()
	if code := exitCode(err); code != 125 || !strings.Contains(string(out), "unknown flag --no-such-flag (see 'boxer serve --help')") {
		t.Errorf("boxer serve --no-such-flag: exit %d\n%s", code, out)
	}
}

// exitCode is a finished command's exit code (0 for a nil error, -1 for
// one that did not exit).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
