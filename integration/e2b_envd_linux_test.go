package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envd through the real SDK, served from the host: commands (a run, exit
// codes, streaming, stdin, a background command killed, connect, a PTY)
// and files (write, read, list, makeDir, exists, getInfo, rename,
// remove, watchDir), escapes out of the sandbox's roots refused, on one
// sandbox per runtime.

// envdScript reads a script of integration/e2b.
func envdScript(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("e2b", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestE2BEnvd(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], envdScript(t, "envd_commands.mjs")))
			id := strings.TrimPrefix(out[0], "id ")
			checkLines(t, "commands", out[1:], []string{
				`run "hi\n/home/user\nbar\n" "oops\n" 0`,
				`exit CommandExitError 3 exit status 3`,
				`cwd /tmp`,
				`tools 4 curl`,
				`streamed line1,line2,line3 true`,
				`stdin "from stdin\n"`,
				"closed stdin 4",
				`listed /bin/bash -l -c sleep 300 /home/user`,
				`kill true`,
				`killed CommandExitError 137`,
				`listed after kill false`,
				`kill again false`,
				`connect true tick1,tick2,tick3,tick4,tick5 true`,
				`pty 5`,
				`root SandboxError true`,
			})
			out = lines(e.node(t, e.keys[0], envdScript(t, "envd_files.mjs"), "SANDBOX="+id))
			checkLines(t, "files", out, []string{
				`write /home/user/dir/a.txt a.txt file`,
				`read hello file hello file`,
				`bytes 10`,
				`multi one two`,
				`cat hello filenobody`,
				`makeDir true false`,
				`list a.txt:file,sub:dir`,
				`list depth 3 /home/user/dir/a.txt,/home/user/dir/sub,/home/user/dir/sub/deeper`,
				`exists true false`,
				`info a.txt file 10 user -rw-r--r-- true`,
				`rename /workspace/b.txt false hello file`,
				`removed false false`,
				`watch true true true`,
				`read symlink out FileNotFoundError true`,
				`read through a link out FileNotFoundError true`,
				`read dotdot SandboxError true`,
				`read outside SandboxError true`,
				`list through a link out FileNotFoundError true`,
				`write through a link out FileNotFoundError true`,
				`rename out SandboxError true`,
				`stat dotdot SandboxError true`,
				`read as root SandboxError true`,
				`link itself symlink`,
			})
		})
	}
}

// checkLines compares a script's output with what it should print, line
// by line.
func checkLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s line %d = %q, want %q", what, i+1, g, w)
		}
	}
}
