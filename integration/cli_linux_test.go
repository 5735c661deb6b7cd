package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestHelloAndResult(t *testing.T) {
	r := boxer(t, nil, "run", "--lang", "python", "-c", "print(1)")
	if r.code != 0 || r.stdout != "1\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	res, r := python(t, `import sys; print("out"); print("err", file=sys.stderr); sys.exit(3)`)
	if r.code != 3 || res.ExitCode != 3 || res.Status != "exited" {
		t.Errorf("exit %d/%d status %s, want 3 exited", r.code, res.ExitCode, res.Status)
	}
	if res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if !strings.HasPrefix(res.ID, "bx-") || res.Runtime != "runc" || res.Image != "boxer/python" {
		t.Errorf("id %q runtime %q image %q", res.ID, res.Runtime, res.Image)
	}
	if res.DurationMs <= 0 || res.MemoryPeakBytes == 0 || res.CPUTimeMs <= 0 {
		t.Errorf("figures not filled: duration %.1f memory %d cpu %.1f", res.DurationMs, res.MemoryPeakBytes, res.CPUTimeMs)
	}
	// Exactly one JSON object on stdout, and the documented keys.
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "status", "exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "duration_ms", "memory_peak_bytes", "cpu_time_ms", "runtime", "image"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	assertClean(t)
}

func TestCodeFromFileAndStdin(t *testing.T) {
	f := filepath.Join(t.TempDir(), "prog.py")
	if err := os.WriteFile(f, []byte("print('from file')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := boxer(t, nil, "run", "--lang", "python", "-f", f); r.stdout != "from file\n" {
		t.Errorf("-f: stdout %q stderr %q", r.stdout, r.stderr)
	}
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--lang", "python")
	cmd.Env = testEnv
	cmd.Stdin = strings.NewReader("import sys\nprint('from stdin', repr(sys.stdin.read()))\n")
	out, err := cmd.Output()
	// The program's own stdin is empty: EOF at once.
	if err != nil || string(out) != "from stdin ''\n" {
		t.Errorf("stdin: %q %v", out, err)
	}
	assertClean(t)
}

func TestEnvAndInvalidUTF8(t *testing.T) {
	res, _ := python(t, `import os, sys; print(os.environ["GREETING"]); sys.stdout.buffer.write(b"\xff\xfe ok\n")`, "--env", "GREETING=hello, world")
	if res.Stdout != "hello, world\n\uFFFD\uFFFD ok\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	assertClean(t)
}

func TestImageCommand(t *testing.T) {
	r := boxer(t, nil, "run", "--image", "boxer/python", "--", "python3", "-c", "import sys; print(sys.argv[1:])", "a b", "c")
	if r.code != 0 || r.stdout != "['a b', 'c']\n" {
		t.Errorf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertClean(t)
}

func TestExecFailures(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		code int
	}{
		{"not found", []string{"no-such-command"}, 127},
		{"no such path", []string{"/no/such/file"}, 127},
		{"not executable", []string{"/etc/passwd"}, 126},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := boxer(t, nil, append([]string{"run", "--image", "boxer/python", "--"}, tc.argv...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tc.code, r.stderr)
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 || !strings.HasPrefix(r.stderr, "boxer: ") {
				t.Errorf("want one boxer line on stderr, got %q", r.stderr)
			}
			assertClean(t)
		})
	}
}

func TestBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.py")
	tests := []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"bad memory", []string{"run", "--lang", "python", "--memory", "lots", "-c", "1"}, "--memory"},
		{"tiny memory", []string{"run", "--lang", "python", "--memory", "1k", "-c", "1"}, "--memory must be at least"},
		{"negative timeout", []string{"run", "--lang", "python", "--timeout", "-1s", "-c", "1"}, "--timeout"},
		{"bad timeout", []string{"run", "--lang", "python", "--timeout", "soon", "-c", "1"}, "timeout"},
		{"zero cpus", []string{"run", "--lang", "python", "--cpus", "0", "-c", "1"}, "--cpus"},
		{"zero pids", []string{"run", "--lang", "python", "--pids", "0", "-c", "1"}, "--pids"},
		{"bad tmp-size", []string{"run", "--lang", "python", "--tmp-size", "-5m", "-c", "1"}, "--tmp-size"},
		{"zero output", []string{"run", "--lang", "python", "--output-limit", "0", "-c", "1"}, "--output-limit"},
		{"unknown lang", []string{"run", "--lang", "cobol", "-c", "1"}, `unknown language "cobol"`},
		{"bad user", []string{"run", "--lang", "python", "--user", "root", "-c", "1"}, "--user"},
		{"bad env", []string{"run", "--lang", "python", "--env", "1X=2", "-c", "1"}, "--env"},
		{"env without value", []string{"run", "--lang", "python", "--env", "NOEQUALS", "-c", "1"}, "NAME=VALUE"},
		{"missing file", []string{"run", "--lang", "python", "-f", missing}, "no such file"},
		{"code and file", []string{"run", "--lang", "python", "-c", "1", "-f", missing}, "not both"},
		{"missing image", []string{"run", "--image", "boxer/nope", "--", "true"}, "image boxer/nope not found"},
		{"nothing to run", []string{"run"}, "nothing to run"},
		{"runtime", []string{"run", "--lang", "python", "--runtime", "kata", "-c", "1"}, "--runtime"},
		{"network", []string{"run", "--lang", "python", "--network", "host", "-c", "1"}, "--network"},
		{"unknown flag", []string{"run", "--frobnicate"}, "frobnicate"},
		{"empty seccomp", []string{"run", "--lang", "python", "--seccomp-profile", "/dev/null", "-c", "1"}, "seccomp"},
		{"missing stdin file", []string{"run", "--lang", "python", "--stdin-file", missing, "-c", "1"}, "--stdin-file"},
		{"copy-out onto a file", []string{"run", "--lang", "python", "--copy-out", "/etc/hostname", "-c", "1"}, "not a directory"},
		{"missing lang image", []string{"run", "--lang", "python", "--image", "no/such:image", "-c", "1"}, "image no/such:image not found"},
		{"import missing", []string{"image", "import", missing}, "not a readable file"},
		{"pull nothing", []string{"image", "pull"}, "exactly one REF"},
		{"rm missing", []string{"image", "rm", "no/such:image"}, "not found"},
		{"setup unknown lang", []string{"setup", "--lang", "cobol"}, "unknown language"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := boxer(t, nil, tc.args...)
			if r.code != 125 {
				t.Errorf("exit %d, want 125 (stderr %q)", r.code, r.stderr)
			}
			line := strings.TrimSpace(r.stderr)
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "boxer: ") || !strings.Contains(line, tc.want) {
				t.Errorf("stderr %q, want one line naming %q", r.stderr, tc.want)
			}
			assertClean(t)
		})
	}
}

func TestMissingPresetImageSaysSetup(t *testing.T) {
	// A namespace without images: the preset's image is missing.
	r := boxer(t, nil, "--namespace", "boxer-empty", "run", "--lang", "python", "-c", "1")
	if r.code != 125 || !strings.Contains(r.stderr, "run 'boxer setup --lang python'") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
	assertClean(t)
}

func TestUnreachableContainerd(t *testing.T) {
	r := boxer(t, nil, "--address", "/nonexistent/containerd.sock", "run", "--lang", "python", "-c", "1")
	if r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d stderr %q, want 125 and one line", r.code, r.stderr)
	}
	assertClean(t)
}

// waitExit waits up to d for the started cmd to exit. If it does not, it is
// killed and reaped, and waitExit reports false.
func waitExit(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// TestInterrupt sends SIGINT or SIGTERM to boxer at moments spread over a
// run's life (connecting, creating, running) and checks that every time the
// sandbox is gone when boxer exits.
func TestInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, delay := range []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond, 200 * time.Millisecond, 800 * time.Millisecond} {
			t.Run(sig.String()+"/"+delay.String(), func(t *testing.T) {
				cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--lang", "python", "-c", "import time; print('up', flush=True); time.sleep(60)")
				cmd.Env = testEnv
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(delay)
				_ = cmd.Process.Signal(sig)
				if !waitExit(cmd, 20*time.Second) {
					t.Fatalf("boxer did not exit within 20s of %s", sig)
				}
				code := cmd.ProcessState.ExitCode()
				ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
				switch {
				case ws.Signaled() && ws.Signal() == sig && delay < 800*time.Millisecond:
					// Killed before boxer's handler was installed (its
					// first step in main, which a host loaded twice over
					// reached only after 200 ms): the Go runtime dies of an
					// unhandled signal, and nothing existed yet, which
					// assertClean confirms.
				case code != 128+int(sig):
					t.Errorf("exit %d after %s, want %d", code, sig, 128+int(sig))
				}
				assertClean(t)
			})
		}
	}
}

// TestSIGKILLLeftoversReaped kills boxer with SIGKILL mid-run (nothing can
// clean up then) and checks that the next boxer call reaps what was left.
func TestSIGKILLLeftoversReaped(t *testing.T) {
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--lang", "python", "-c", "import time; time.sleep(60)")
	cmd.Env = testEnv
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForTask(t)
	// Long enough for doctor's runsc probes (up to 10 s each) below.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if ctrs, _ := client.Containers(ctx); len(ctrs) != 1 {
		t.Fatalf("want the killed run's container left behind, found %d", len(ctrs))
	}
	// Clients that make no sandbox do not reap (nor wait for a reaper):
	// the leftover is still there after them.
	for _, args := range [][]string{{"image", "ls"}, {"doctor"}} {
		boxer(t, nil, args...)
		if ctrs, _ := client.Containers(ctx); len(ctrs) != 1 {
			t.Fatalf("boxer %s reaped: %d containers left, want the leftover", args[0], len(ctrs))
		}
	}
	r := boxer(t, nil, "run", "--lang", "python", "-c", "print('next')")
	if r.stdout != "next\n" {
		t.Errorf("next run: %q %q", r.stdout, r.stderr)
	}
	assertClean(t)
}

// TestOrphanTaskReaped leaves a sandbox's task, its program running,
// without its container (as containerd's client can: it deletes a
// container whose task it failed to load), and checks that the next run
// removes the task, its shim and all else, on runc and on runsc.
func TestOrphanTaskReaped(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--runtime", rt, "--lang", "python", "-c", "import time; time.sleep(60)")
			cmd.Env = testEnv
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Running, not only created: a run killed while containerd
			// creates its task has that creation rolled back.
			waitForRunningTask(t)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ctrs, err := client.Containers(ctx)
			if err != nil || len(ctrs) != 1 {
				t.Fatalf("want the killed run's container left behind, found %d (%v)", len(ctrs), err)
			}
			id := ctrs[0].ID()
			// The container's record only: the client would refuse.
			if err := client.ContainerService().Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			tasks, err := client.TaskService().List(ctx, nil)
			if err != nil || len(tasks.Tasks) != 1 || tasks.Tasks[0].ID != id {
				t.Fatalf("want task %s left without its container, found %v (%v)", id, tasks, err)
			}
			r := boxer(t, nil, "run", "--runtime", rt, "--lang", "python", "-c", "print('next')")
			if r.stdout != "next\n" {
				t.Errorf("next run: %q %q", r.stdout, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestRunscDebrisReaped leaves what runsc leaves of a gVisor container
// whose create was cut short (a lock and a control socket, no state) and
// checks that the next run removes it once it is old, and only then.
func TestRunscDebrisReaped(t *testing.T) {
	root := filepath.Join("/run/containerd/runc", namespace)
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	oldFiles := []string{"bx-0123456789abcdef_sandbox:bx-0123456789abcdef.lock", "runsc-bx-0123456789abcdef.sock"}
	young := "bx-fedcba9876543210_sandbox:bx-fedcba9876543210.lock"
	for _, f := range append(oldFiles, young) {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(root, young)) })
	for _, f := range oldFiles {
		if err := os.Chtimes(filepath.Join(root, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	r := boxer(t, nil, "run", "--lang", "python", "-c", "print('next')")
	if r.stdout != "next\n" {
		t.Errorf("run: %q %q", r.stdout, r.stderr)
	}
	for _, f := range oldFiles {
		if _, err := os.Lstat(filepath.Join(root, f)); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", f, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, young)); err != nil {
		t.Errorf("%s, a minute old at most, was removed: %v", young, err)
	}
	_ = os.Remove(filepath.Join(root, young))
	assertClean(t)
}

// TestShimKilledMidRun kills a sandbox's shim with SIGKILL while its program
// runs. containerd then cleans up after the dead shim by running the shim's
// delete, which must reach the real shim through boxer's wrapper (runc state
// and mounts are still there) and remove the container; boxer must end, and
// nothing may be left.
func TestShimKilledMidRun(t *testing.T) {
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--json", "--lang", "python", "-c", "import time; time.sleep(60)")
	cmd.Env = testEnv
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForTask(t)
	// The shim daemon is the one whose parent is init (it double-forks); a
	// child it forked to run runc has the same command line for a moment.
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, p := range processesMatching(stateDir) {
			n, _ := strconv.Atoi(strings.Fields(p)[0])
			if parentPID(n) == 1 {
				pid = n
			}
		}
	}
	if pid == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("no shim daemon among %q", processesMatching(stateDir))
	}
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	if !waitExit(cmd, 30*time.Second) {
		t.Fatal("boxer did not end within 30s of its shim's death")
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Status == "exited" && res.ExitCode == 0 {
		t.Errorf("result after the shim's death: %v %s", err, out.String())
	}
	// containerd's cleanup after a dead shim runs on its own, after boxer
	// has removed what it can; it must finish within a bounded time.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if len(processesMatching(stateDir)) == 0 && len(runtimeState()) == 0 {
			break
		}
	}
	assertClean(t)
}

// parentPID reads a process's parent from /proc, 0 if it is gone.
func parentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// TestConcurrentRuns runs 40 sandboxes from 4 boxer processes at a time:
// every one must succeed (each boxer's reaper looks at the others' run
// directories while they are being made) and nothing may be left.
func TestConcurrentRuns(t *testing.T) {
	const workers, total = 4, 40
	runs := make(chan int, total)
	for i := range total {
		runs <- i
	}
	close(runs)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range runs {
				r := boxer(t, nil, "run", "--lang", "python", "-c", fmt.Sprintf("print(%d)", i))
				if r.code != 0 || r.stdout != fmt.Sprintf("%d\n", i) {
					t.Errorf("run %d: exit %d, stdout %q, stderr %q", i, r.code, r.stdout, r.stderr)
				}
			}
		}()
	}
	wg.Wait()
	assertClean(t)
}

// TestClosedStdout reads one line and closes the pipe, as '| head -1' does:
// boxer must not die of SIGPIPE with its sandbox still there.
func TestClosedStdout(t *testing.T) {
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--lang", "python", "-c", "import time\nfor i in range(100):\n    print(i, flush=True); time.sleep(0.01)")
	cmd.Env = testEnv
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(out, buf); err != nil {
		t.Fatal(err)
	}
	out.Close()
	_ = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("boxer died of %s", ws.Signal())
	}
	assertClean(t)
}

// TestOutputStreams checks that plain mode passes lines on as the program
// prints them, not when it ends. The first line is timed against the run's
// end, not its start: a sandbox's start on a loaded host takes seconds
// (make test beside a second run once took 3.1 s to the first line), its
// three seconds of sleep between the lines do not.
func TestOutputStreams(t *testing.T) {
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--lang", "python", "-c", "import time, sys\nprint('first', flush=True)\nprint('err', file=sys.stderr, flush=True)\ntime.sleep(3)\nprint('second')")
	cmd.Env = testEnv
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("first line: %q %v", buf, err)
	}
	first := time.Now()
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil || string(rest) != "second\n" || stderr.String() != "err\n" {
		t.Errorf("rest %q stderr %q err %v", rest, stderr.String(), err)
	}
	if d := time.Since(first); d < 2*time.Second {
		t.Errorf("first line came %s before the run ended, the program slept 3 s after it: not streamed", d)
	}
	assertClean(t)
}
