package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// E2B's own CLI (@e2b/cli, pinned in package-lock.json), unchanged,
// against boxer serve: every sandbox command a user types, the template
// list, the terminal (connect, create without -d) on a real pseudo
// terminal, and what boxer refuses (templates built or deleted,
// snapshots) answered with its 501 naming the feature. The CLI carries
// its own copy of the e2b SDK.

// cliResult is one run of the CLI.
type cliResult struct {
	stdout, stderr string
	code           int
}

// e2bCLI runs E2B's CLI with key as E2B_API_KEY, stdin as its standard
// input (nil: /dev/null), the SDK pointed at e, and a home of its own (no
// user config of E2B's).
func (e *e2bServer) e2bCLI(t *testing.T, key string, stdin *string, args ...string) cliResult {
	t.Helper()
	return runE2BCLI(t, e.cliEnv(t, key), stdin, args...)
}

// runE2BCLI runs E2B's CLI in env.
func runE2BCLI(t *testing.T, env []string, stdin *string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{e2bCLIPath(t)}, args...)...)
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = strings.NewReader(*stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{stdout.String(), stderr.String(), 0}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("e2b %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

func e2bCLIPath(t *testing.T) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "node_modules", "@e2b", "cli", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("E2B's CLI is not installed (%v): run 'make test-deps' (npm ci)", err)
	}
	return p
}

func (e *e2bServer) cliEnv(t *testing.T, key string) []string {
	return append(os.Environ(), "HOME="+t.TempDir(), "E2B_API_KEY="+key,
		"E2B_API_URL="+e.api, "E2B_SANDBOX_URL="+e.api, "NO_UPDATE_NOTIFIER=1")
}

// want fails the test unless r exited with code and its output holds
// each of outs.
func (r cliResult) want(t *testing.T, what string, code int, outs ...string) {
	t.Helper()
	all := r.stdout + r.stderr
	ok := r.code == code
	for _, o := range outs {
		ok = ok && strings.Contains(all, o)
	}
	if !ok {
		t.Errorf("e2b %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", what, r.code, code, outs, r.stdout, r.stderr)
	}
}

var sandboxIDForm = regexp.MustCompile(`bxs-[0-9a-f]+`)

func TestE2BCLI(t *testing.T) {
	e := startE2B(t, "--runtime", "runc")
	key, other := e.keys[0], e.keys[1]
	cli := func(args ...string) cliResult { t.Helper(); return e.e2bCLI(t, key, nil, args...) }

	r := cli("sandbox", "create", "--detach")
	r.want(t, "sandbox create --detach", 0)
	id := strings.TrimSpace(r.stdout)
	if !sandboxIDForm.MatchString(id) {
		t.Fatalf("sandbox create --detach printed %q, not a sandbox ID: %s", id, r.stderr)
	}
	cli("sandbox", "list").want(t, "sandbox list", 0, id, "base", "Running")
	r = cli("sandbox", "list", "--format", "json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 || listed[0]["sandboxId"] != id {
		t.Errorf("sandbox list --format json: %v %q", err, r.stdout)
	}
	cli("sandbox", "list", "--template", "base").want(t, "sandbox list --template base", 0, id)
	cli("sandbox", "list", "--template", "code-interpreter-v1").want(t, "sandbox list --template code-interpreter-v1", 0, "No sandboxes found")
	r = cli("sandbox", "info", "--format", "json", id)
	var info map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info["state"] != "running" || info["templateId"] != "base" || info["allowInternetAccess"] != false {
		t.Errorf("sandbox info --format json: %v %q %s", err, r.stdout, r.stderr)
	}
	cli("sandbox", "info", id).want(t, "sandbox info", 0, "Sandbox ID: "+id, "State: running", "Internet access: false")

	// exec: output, the remote exit code, a quoted argument, piped stdin.
	cli("sandbox", "exec", id, "echo", "hi from exec").want(t, "sandbox exec echo", 0, "hi from exec\n")
	cli("sandbox", "exec", id, "sh", "-c", "echo out; echo err >&2; exit 3").want(t, "sandbox exec exit 3", 3, "out\n", "err\n")
	in := "piped line\n"
	r = e.e2bCLI(t, key, &in, "sandbox", "exec", id, "tr", "a-z", "A-Z")
	r.want(t, "sandbox exec with stdin", 0, "PIPED LINE\n")
	r = cli("sandbox", "exec", "--background", id, "sleep", "30")
	r.want(t, "sandbox exec --background", 0)
	if pid := strings.TrimSpace(r.stderr); pid == "" {
		t.Errorf("sandbox exec --background printed no pid: %q", r.stdout)
	}

	cli("sandbox", "metrics", id).want(t, "sandbox metrics", 0, "Metrics for sandbox "+id, "CPU:", "Memory:", "Disk:")
	// Its logs: made, each command's start and its end with its exit code.
	cli("sandbox", "logs", id).want(t, "sandbox logs", 0, "Logs for sandbox "+id, "sandbox created", "process started", "echo 'hi from exec'", "process ended", "exit 3'", "exit_code: ", "'3'", "WARN")

	cli("sandbox", "pause", id).want(t, "sandbox pause", 0, "Sandbox "+id+" has been paused")
	cli("sandbox", "pause", id).want(t, "sandbox pause again", 0, "Sandbox "+id+" is already paused")
	cli("sandbox", "list").want(t, "sandbox list (running)", 0, "No sandboxes found")
	cli("sandbox", "list", "--state", "paused").want(t, "sandbox list --state paused", 0, id, "Paused")
	cli("sandbox", "resume", id).want(t, "sandbox resume", 0, "Sandbox "+id+" has been resumed")
	cli("sandbox", "info", id).want(t, "sandbox info after resume", 0, "State: running")

	// The terminal: connect on a terminal of no size (as script(1) or a
	// CI runner gives), and create without --detach on one of 100x30.
	out, code := e.e2bTerminal(t, key, 0, 0, "pty-42", "echo pty-$((6*7))", "sandbox", "connect", id)
	if code != 0 || !strings.Contains(out, "pty-42") {
		t.Errorf("sandbox connect: exit %d\n%s", code, out)
	}
	out, code = e.e2bTerminal(t, key, 100, 30, "30 100", "stty size", "sandbox", "create")
	if code != 0 || !strings.Contains(out, "30 100") {
		t.Errorf("sandbox create on a terminal: exit %d\n%s", code, out)
	}

	cli("template", "list").want(t, "template list", 0, "python-data", "code-interpreter-v1", "base, python", "Public")
	r = cli("template", "list", "--format", "json")
	var tmpls []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &tmpls); err != nil || len(tmpls) == 0 {
		t.Errorf("template list --format json: %v %q %s", err, r.stdout, r.stderr)
	}
	// The server's own templates are no key's to delete.
	cli("template", "delete", "--yes", "base").want(t, "template delete", 1, "[404]", `template "base" not found`)
	// Snapshots need gVisor: on runc, a 409 saying why.
	cli("sandbox", "snapshot", "create", id).want(t, "sandbox snapshot create", 1, "409", "runc")
	cli("sandbox", "snapshot", "list").want(t, "sandbox snapshot list", 0, "No snapshots found")

	// Another key sees none of it.
	o := e.e2bCLI(t, other, nil, "sandbox", "list")
	o.want(t, "sandbox list (other key)", 0, "No sandboxes found")
	e.e2bCLI(t, other, nil, "sandbox", "kill", id).want(t, "sandbox kill (other key)", 0, "Sandbox "+id+" wasn't found")
	e.e2bCLI(t, other, nil, "sandbox", "info", id).want(t, "sandbox info (other key)", 1, "Sandbox "+id+" wasn't found")

	cli("sandbox", "kill", id).want(t, "sandbox kill", 0, "Sandbox "+id+" has been killed")
	cli("sandbox", "kill", id).want(t, "sandbox kill again", 0, "Sandbox "+id+" wasn't found")
	cli("sandbox", "info", id).want(t, "sandbox info after kill", 1, "Sandbox "+id+" wasn't found")
	for range 2 {
		cli("sandbox", "create", "--detach").want(t, "sandbox create --detach", 0, "bxs-")
	}
	cli("sandbox", "kill", "--all").want(t, "sandbox kill --all", 0, "Killed 2 running sandboxes")
	cli("sandbox", "list", "--state", "running,paused").want(t, "sandbox list at the end", 0, "No sandboxes found")
	e.stop(t)
	assertClean(t)
}

// TestE2BCLIDomain: the CLI finds the server by host names over TLS
// (E2B_DOMAIN with --e2b-domain), as it finds E2B's cloud.
func TestE2BCLIDomain(t *testing.T) {
	e, domainEnv := startE2BDomain(t)
	env := append(append(os.Environ(), "HOME="+t.TempDir(), "E2B_API_KEY="+e.keys[0], "NO_UPDATE_NOTIFIER=1"), domainEnv...)
	r := runE2BCLI(t, env, nil, "sandbox", "create", "--detach")
	r.want(t, "sandbox create --detach", 0)
	id := strings.TrimSpace(r.stdout)
	if !sandboxIDForm.MatchString(id) {
		t.Fatalf("sandbox create --detach printed %q, not a sandbox ID: %s", id, r.stderr)
	}
	runE2BCLI(t, env, nil, "sandbox", "exec", id, "echo", "over TLS").want(t, "sandbox exec", 0, "over TLS\n")
	runE2BCLI(t, env, nil, "sandbox", "info", id).want(t, "sandbox info", 0, "Sandbox domain: sb.test:")
	runE2BCLI(t, env, nil, "template", "list").want(t, "template list", 0, "code-interpreter-v1")
	runE2BCLI(t, env, nil, "sandbox", "kill", id).want(t, "sandbox kill", 0, "Sandbox "+id+" has been killed")
	e.stop(t)
	assertClean(t)
}

// e2bTerminal runs the CLI on a pseudo terminal of cols x rows, types
// line once it has connected, waits for want, types exit and returns
// what the terminal showed and the CLI's exit code.
func (e *e2bServer) e2bTerminal(t *testing.T, key string, cols, rows uint16, want, line string, args ...string) (string, int) {
	t.Helper()
	master, tty := openTerminal(t, cols, rows)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{e2bCLIPath(t)}, args...)...)
	cmd.Env = append(e.cliEnv(t, key), "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	must(t, cmd.Start())
	tty.Close()
	var mu sync.Mutex
	var shown bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			shown.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	screen := func() string { mu.Lock(); defer mu.Unlock(); return shown.String() }
	waitFor := func(s string) bool {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if strings.Contains(screen(), s) {
				return true
			}
			select {
			case <-exited:
				t.Errorf("e2b %s ended before %q showed:\n%s", strings.Join(args, " "), s, screen())
				return false
			default:
			}
		}
		t.Errorf("e2b %s: %q never showed:\n%s", strings.Join(args, " "), s, screen())
		return false
	}
	// The shell's prompt says the terminal is there.
	if waitFor("Terminal connecting") && waitFor("$ ") {
		fmt.Fprintf(master, "%s\r", line)
		waitFor(want)
	}
	fmt.Fprint(master, "exit\r")
	<-exited
	code := 0
	if ee, ok := waitErr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if waitErr != nil {
		t.Fatal(waitErr)
	}
	// The reader ends when the terminal has no writer left.
	time.Sleep(100 * time.Millisecond)
	return screen(), code
}

// openTerminal opens a pseudo terminal of cols x rows (0 x 0: a terminal
// that says no size, as script(1) gives): its master side and its
// terminal.
func openTerminal(t *testing.T, cols, rows uint16) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	fd := int(m.Fd())
	must(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	must(t, err)
	must(t, unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}))
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	return m, s
}
