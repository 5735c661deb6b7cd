package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Preloaded interpreters (docs/reference.md): a warm python-data sandbox
// whose interpreter has imported numpy, pandas and matplotlib before its
// program is known runs the program exactly as python3 -u /code/main.py
// does in a plain sandbox.

// preloadCases are programs run both ways; each must give the same
// stdout, stderr, status and exit code.
var preloadCases = []struct {
	name  string
	code  string
	extra map[string]any
}{
	{name: "argv, __file__, __main__", code: `
import os, sys, __main__
print(sys.argv, __file__, __name__, __spec__, type(__loader__).__name__, __package__, __cached__)
print(sorted(vars(__main__)), type(__builtins__).__name__, os.getpid(), os.getppid(), sys.flags.unbuffered)`},
	{name: "sys.path, cwd, environment", code: `
import os, sys
print(sys.path, os.getcwd())
print(sorted(os.environ.items()))
print([k for k in sys.path_importer_cache if "boxer" in k], sys.modules["sitecustomize"].__file__)`},
	{name: "if __name__", code: `
def main():
    print("main ran")
if __name__ == "__main__":
    main()`},
	{name: "sys.exit(3)", code: "import sys\nprint('before')\nsys.exit(3)"},
	{name: "sys.exit(message)", code: "import sys\nsys.exit('bye now')"},
	{name: "uncaught ValueError", code: "def f(x):\n    raise ValueError('boom %d' % x)\n\nf(7)\n"},
	{name: "exception in an except", code: "try:\n    1/0\nexcept ZeroDivisionError:\n    {}['k']\n"},
	{name: "syntax error", code: "print('x'\n"},
	{name: "stdin", code: "import sys\nprint(repr(sys.stdin.read()))", extra: map[string]any{"stdin": "hello\nworld"}},
	{name: "SIGTERM", code: "import os, signal, time\nprint('up')\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)"},
	{name: "SIGINT is KeyboardInterrupt", code: "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)"},
	{name: "timeout", code: "import time\nprint('started')\ntime.sleep(30)", extra: map[string]any{"timeout": "2s"}},
	{name: "unbuffered", code: "import sys\nfor i in range(3):\n    print('out', i)\n    print('err', i, file=sys.stderr)\nimport os\nos._exit(4)"},
	{name: "warnings", code: "import warnings\nwarnings.warn('careful')\nwarnings.warn('old', DeprecationWarning)"},
	{name: "sibling file in the workspace", code: "import sys\nsys.path.insert(0, '.')\nimport helper\nprint(helper.X)\nimport helper2",
		extra: map[string]any{"files": map[string]string{"helper.py": "X = 42\n"}}},
	{name: "user site in the workspace", code: "import sys, usermod\nprint(usermod.V, sys.path)",
		extra: map[string]any{"files": map[string]string{".local/lib/python3.11/site-packages/usermod.py": "V = 'from the user site'\n"}}},
	{name: "atexit", code: "import atexit\natexit.register(lambda: print('bye'))\nraise SystemExit(2)"},
	// One caller per sandbox: nothing of an earlier program is there.
	{name: "fresh sandbox", code: "import os\nprint(os.path.exists('/tmp/mark'), sorted(os.listdir('/workspace')))\nopen('/tmp/mark', 'w').write('x')\nopen('/workspace/mark', 'w').write('x')"},
}

// TestPreloadSameAsPlain runs every case on a preloaded warm sandbox and
// on a plain one (preload: false, which takes no preloaded sandbox), on
// runc and runsc, and proves that the preloaded one had pandas imported.
func TestPreloadSameAsPlain(t *testing.T) {
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			warm := "python-data"
			if rt == "runsc" {
				warm += ":runsc"
			}
			s := startServer(t, "--warm", warm, "--warm-size", "1", "--concurrency", "1")
			post := func(code string, extra map[string]any, preload bool) (result, bool) {
				t.Helper()
				req := map[string]any{"lang": "python-data", "code": code, "runtime": rt}
				for k, v := range extra {
					req[k] = v
				}
				if !preload {
					req["preload"] = false
				}
				body, _ := json.Marshal(req)
				for deadline := time.Now().Add(90 * time.Second); ; {
					before := warmRuns(t, s)
					status, _, resp := s.post(t, string(body))
					var res result
					if status != 200 || json.Unmarshal(resp, &res) != nil {
						t.Fatalf("%d %s", status, resp)
					}
					took := warmRuns(t, s) > before
					// A preloaded run waits for a warm sandbox: one that
					// went cold (the pool refilling) is run again.
					if !preload || took || time.Now().After(deadline) {
						return res, took
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
			res, took := post("import sys\nprint('pandas' in sys.modules, 'matplotlib.pyplot' in sys.modules)", nil, true)
			if !took || res.Stdout != "True True\n" {
				t.Fatalf("preloaded run (warm %v): %q %q, want True True", took, res.Stdout, res.Stderr)
			}
			if res.CPUTimeMs > 500 {
				t.Errorf("a preloaded run's CPU figure is %.0f ms: the imports counted", res.CPUTimeMs)
			}
			res, took = post("import sys\nprint('pandas' in sys.modules, 'matplotlib.pyplot' in sys.modules)", nil, false)
			if took || res.Stdout != "False False\n" {
				t.Fatalf("plain run (warm %v): %q %q, want False False", took, res.Stdout, res.Stderr)
			}
			for _, tc := range preloadCases {
				t.Run(tc.name, func(t *testing.T) {
					pre, took := post(tc.code, tc.extra, true)
					if !took {
						t.Fatalf("no preloaded sandbox was taken")
					}
					plain, _ := post(tc.code, tc.extra, false)
					if pre.Stdout != plain.Stdout || pre.Stderr != plain.Stderr || pre.ExitCode != plain.ExitCode || pre.Status != plain.Status {
						t.Errorf("preloaded and plain differ:\npreloaded %s %d\n%s\n%s\nplain     %s %d\n%s\n%s",
							pre.Status, pre.ExitCode, pre.Stdout, pre.Stderr, plain.Status, plain.ExitCode, plain.Stdout, plain.Stderr)
					}
					if tc.name == "uncaught ValueError" && !strings.Contains(pre.Stderr, "Traceback") {
						t.Errorf("no traceback: %q", pre.Stderr)
					}
				})
			}
			must(t, s.cmd.Process.Signal(syscall.SIGTERM))
			_ = s.cmd.Wait()
			assertClean(t)
		})
	}
}

// TestPreloadStandby: a python-data CLI run leaves a preloaded standby;
// the next run takes it, finds pandas imported and otherwise sees what
// a cold run sees; a --no-preload run is not of its shape and takes
// none; bad --preload entries exit 125 with one line.
func TestPreloadStandby(t *testing.T) {
	probe := `
import os, sys
print('pandas' in sys.modules, sys.argv, __file__, sys.path, os.getcwd(), sorted(os.environ.items()), os.getppid(),
      sorted(os.listdir("/workspace")), repr(sys.stdin.read()))
`
	stdin := filepath.Join(t.TempDir(), "stdin")
	must(t, os.WriteFile(stdin, []byte("line one\nline two"), 0o644))
	env := withStandby("5m")
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Cleanup(func() { endStandbys(t) })
			args := []string{"--debug", "run", "--runtime", rt, "--lang", "python-data", "--stdin-file", stdin, "-c", probe}
			cold := boxer(t, env, args...)
			if cold.code != 0 || claimed(cold) || !strings.HasPrefix(cold.stdout, "False ") {
				t.Fatalf("first run: %d claimed %v %q %s", cold.code, claimed(cold), cold.stdout, cold.stderr)
			}
			first := waitStandbys(t, 1)
			warm := boxer(t, env, args...)
			if warm.code != 0 || !claimed(warm) || !strings.Contains(warm.stderr, first[0]) {
				t.Fatalf("second run did not take standby %s: %d %s", first[0], warm.code, warm.stderr)
			}
			if want := "True " + strings.TrimPrefix(cold.stdout, "False "); warm.stdout != want {
				t.Errorf("a preloaded standby on %s:\nstandby %s\nwant    %s", rt, warm.stdout, want)
			}
			next := waitStandbys(t, 1)
			off := boxer(t, env, append([]string{"--debug", "run", "--no-preload"}, args[2:]...)...)
			if off.code != 0 || claimed(off) || off.stdout != cold.stdout {
				t.Errorf("--no-preload run: %d claimed %v %q", off.code, claimed(off), off.stdout)
			}
			// It leaves a standby of its own shape, beside the preloaded one.
			if got := waitStandbys(t, 2); !slices.Contains(got, next[0]) {
				t.Errorf("the preloaded standby %s is gone after a --no-preload run: %v", next[0], got)
			}
			endStandbys(t)
			assertClean(t)
		})
	}
	for _, bad := range []string{"python-data=nu-mpy", "bash=x", "python-data"} {
		r := boxer(t, nil, "run", "--preload", bad, "--lang", "python-data", "-c", "print(1)")
		if r.code != 125 || !strings.Contains(r.stderr, "--preload") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("--preload %s: exit %d %q, want 125 and one line naming --preload", bad, r.code, r.stderr)
		}
	}
}
