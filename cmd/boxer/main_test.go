package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// asBoxer makes the test binary boxer itself when set: the tests run
// boxer's command lines as processes, as a user types them.
const asBoxer = "BOXER_TEST_AS_BOXER"

func TestMain(m *testing.M) {
	if os.Getenv(asBoxer) == "1" {
		os.Exit(run(os.Args))
	}
	os.Exit(m.Run())
}

// cmdRun is one finished boxer process.
type cmdRun struct {
	code           int
	stdout, stderr string
}

// boxerCmd is boxer with args in a world of its own: no containerd answers
// at its address, and its state is under a temporary directory, so that a
// command that gets as far as containerd fails instead of starting one.
func boxerCmd(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{
		asBoxer + "=1",
		"PATH=" + os.Getenv("PATH"),
		"BOXER_ADDRESS=" + filepath.Join(dir, "no-containerd.sock"),
		"BOXER_SYSTEM_ADDRESS=",
		"BOXER_STATE=" + filepath.Join(dir, "state"),
		"BOXER_ROOT=" + filepath.Join(dir, "root"),
		"BOXER_STANDBY=0",
	}
	return cmd
}

// finish runs cmd and returns what it said and its exit code.
func finish(t *testing.T, cmd *exec.Cmd) cmdRun {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cmdRun{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", cmd.Args, err)
	}
	return r
}

// boxer runs boxer with args, as this test's user.
func boxer(t *testing.T, args ...string) cmdRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return finish(t, boxerCmd(t, self, args...))
}

// wantLine fails unless r exited 125 with one line on stderr holding want.
func wantLine(t *testing.T, r cmdRun, want string) {
	t.Helper()
	line := strings.TrimSuffix(r.stderr, "\n")
	if r.code != 125 || strings.Contains(line, "\n") || !strings.Contains(line, want) {
		t.Errorf("exit %d, stderr %q; want 125 and one line with %q", r.code, r.stderr, want)
	}
}

// needRoot skips a test of what boxer says past its root check.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: boxer refuses to go further without it")
	}
}

// TestUsageMessages: a command line boxer cannot read gets one line that
// gives an example or names the flag meant, and exit 125.
func TestUsageMessages(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"duration without unit", []string{"run", "--timeout", "5", "-c", "1"}, "--timeout 5: give a unit, e.g. 5s, 500ms, 2m"},
		{"session duration without unit", []string{"session", "create", "--idle-timeout", "10"}, "--idle-timeout 10: give a unit, e.g. 10s"},
		{"serve duration without unit", []string{"serve", "--shutdown-grace", "3"}, "--shutdown-grace 3: give a unit"},
		{"not a duration", []string{"run", "--timeout", "soon", "-c", "1"}, "--timeout soon: not a duration: give one like 5s"},
		{"not a number", []string{"run", "--cpus", "many", "-c", "1"}, "--cpus many: give a number, e.g. --cpus 0.5"},
		{"flag near another", []string{"run", "--language", "python", "-c", "1"}, "unknown flag --language: did you mean --lang?"},
		{"typo of a flag", []string{"session", "ls", "--jsno"}, "unknown flag --jsno: did you mean --json?"},
		{"flag near nothing", []string{"run", "--frobnicate"}, "unknown flag --frobnicate (see 'boxer run --help')"},
		{"global flag near another", []string{"--namspace", "x", "image", "ls"}, "unknown flag --namspace: did you mean --namespace?"},
		{"flag without its value", []string{"run", "--lang"}, "--lang needs a value (see 'boxer run --help')"},
		{"command near another", []string{"sesion", "ls"}, `unknown command "sesion": did you mean 'boxer session'?`},
		{"subcommand near another", []string{"image", "lss"}, `unknown command "lss": did you mean 'boxer image ls'?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantLine(t, boxer(t, tc.args...), tc.want)
		})
	}
}

// TestHelpCommand: 'boxer help CMD' is 'boxer CMD --help'.
func TestHelpCommand(t *testing.T) {
	for _, args := range [][]string{{"help", "run"}, {"image", "help", "rm"}} {
		r := boxer(t, args...)
		if want := "boxer " + strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "help" }), " ") + " - "; r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want the help of %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestUsageMessagesPastRoot: the same for what the commands themselves
// read, before they reach containerd.
func TestUsageMessagesPastRoot(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"size without unit", []string{"run", "--lang", "python", "--tmp-size", "5", "-c", "1"}, "--tmp-size 5: give a unit, e.g. 5m, 512MiB or 1g"},
		{"memory without unit", []string{"session", "create", "--lang", "python", "--memory", "100"}, "--memory 100: give a unit, e.g. 100m"},
		{"serve size without unit", []string{"serve", "--max-memory", "512"}, "--max-memory 512: give a unit"},
		{"session create with a language", []string{"session", "create", "python"}, "session create takes no arguments: use --lang python"},
		{"session create with a word", []string{"session", "create", "fast"}, "session create takes no arguments, only flags"},
		{"flags after FILE", []string{"image", "import", "/nonexistent/image.tar", "--name", "x/y:1"}, "image import: /nonexistent/image.tar is not a readable file"},
		{"flags after ID", []string{"session", "run", "bxs-0", "--timeout", "5"}, "--timeout 5: give a unit"},
		{"language as a command", []string{"run", "python", "-c", "print(1)"}, "python is not a command here: name the language with --lang, e.g. boxer run --lang python -c 'print(1)'"},
		{"interpreter as a command", []string{"run", "node", "x.js"}, "node is not a command here: name the language with --lang, e.g. boxer run --lang javascript -c CODE"},
		{"code as an argument", []string{"run", "--lang", "python", "print(1)"}, "with --lang the program is code, not an argument: give it with -c, -f FILE or on stdin, e.g. boxer run --lang python -c 'print(1)'"},
		{"lifetime past the cap", []string{"session", "create", "--lang", "python", "--lifetime", "48h"}, "--lifetime 48h is longer than a session may live (24h): give at most --lifetime 24h"},
		{"cp of a file not there", []string{"session", "cp", "nosuch.csv", "bxs-0123456789abcdef:x.csv"}, "nosuch.csv: no such file or directory on this host: SRC is the host file or directory to copy into the session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantLine(t, boxer(t, tc.args...), tc.want)
		})
	}
	// A bare size of 4096 bytes or more is taken as bytes, as before.
	if r := boxer(t, "run", "--lang", "python", "--output-limit", "1000", "--tmp-size", "8388608", "-c", "1"); strings.Contains(r.stderr, "give a unit") {
		t.Errorf("bare sizes refused: %q", r.stderr)
	}
}

// TestServeFailsFastOnBusyPort: a listen address in use is said before
// boxer reaches containerd, with a free one to pick; the audit log's
// directory is made (0700) before that, as on a fresh host.
func TestServeFailsFastOnBusyPort(t *testing.T) {
	needRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	audit := filepath.Join(t.TempDir(), "log", "boxer", "audit.jsonl")
	r := boxer(t, "serve", "--listen", busy, "--audit-log", audit)
	wantLine(t, r, "listen "+busy+": address is in use: pick another with --listen 127.0.0.1:")
	st, err := os.Stat(filepath.Dir(audit))
	if err != nil {
		t.Fatalf("audit log's directory: %v", err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("audit log's directory has mode %v, want 0700", st.Mode().Perm())
	}
	if _, err := os.Stat(audit); err != nil {
		t.Errorf("audit log: %v", err)
	}
}

// TestSessionPortBusy: 'session port --listen' on a port in use says so
// before boxer reaches containerd, with a free one to pick.
func TestSessionPortBusy(t *testing.T) {
	needRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	r := boxer(t, "session", "port", "--listen", busy, "bxs-0123456789abcdef", "8000")
	wantLine(t, r, "--listen "+busy+": address is in use: pick another, e.g. --listen 127.0.0.1:")
}

// TestNonRoot runs boxer as nobody: every command says it must run as
// root, in one line, before any lock or socket answers "permission
// denied"; doctor fails its root check; help still works.
func TestNonRoot(t *testing.T) {
	needRoot(t)
	// A copy of this binary that nobody may run.
	dir, err := os.MkdirTemp("", "boxer-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "boxer")
	copyFile(t, bin)
	asNobody := func(args ...string) cmdRun {
		cmd := boxerCmd(t, bin, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return finish(t, cmd)
	}
	const root = "boxer must run as root (it drives containerd and runc): try sudo "
	for _, tc := range []struct {
		args []string
		try  string
	}{
		{[]string{"run", "--lang", "python", "-c", "print(1)"}, "boxer run …"},
		{[]string{"session", "ls"}, "boxer session ls"},
		{[]string{"session", "create", "--lang", "python"}, "boxer session create …"},
		{[]string{"image", "ls"}, "boxer image ls"},
		{[]string{"image", "import", "image.tar", "--name", "x"}, "boxer image import …"},
		{[]string{"setup"}, "boxer setup"},
		{[]string{"containerd", "status"}, "boxer containerd status"},
		{[]string{"serve"}, "boxer serve"},
		{[]string{"mcp"}, "boxer mcp"},
	} {
		r := asNobody(tc.args...)
		if want := root + tc.try + "\n"; r.code != 125 || r.stderr != want {
			t.Errorf("%v: exit %d stderr %q, want 125 and %q", tc.args, r.code, r.stderr, want)
		}
	}
	r := asNobody("doctor")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "FAIL  root") || !strings.Contains(r.stdout, "boxer must run as root") {
		t.Errorf("doctor: exit %d stdout %q stderr %q, want 1 and a failed root check first", r.code, r.stdout, r.stderr)
	}
	if r := asNobody("image", "ls", "--help"); r.code != 0 || !strings.Contains(r.stdout, "boxer image ls") {
		t.Errorf("--help: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// copyFile copies this test binary to dst, executable by all.
func copyFile(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
