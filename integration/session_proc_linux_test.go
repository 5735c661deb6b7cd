package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/leftover"
	"github.com/boxer-dev/boxer/runner"
)

// sessionExec runs 'boxer session exec' with stdin.
func sessionExec(t *testing.T, stdin string, args ...string) run {
	t.Helper()
	cmd := exec.Command(boxerBin, append([]string{"--namespace", namespace, "session", "exec"}, args...)...)
	cmd.Env = testEnv
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("session exec: %v", err)
	}
	return r
}

// pipeBoxer starts boxer with args in the test's namespace, its stdout
// a pipe and its stderr kept.
func pipeBoxer(t *testing.T, args ...string) (*exec.Cmd, io.ReadCloser, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(boxerBin, append([]string{"--namespace", namespace}, args...)...)
	cmd.Env = testEnv
	errb := &strings.Builder{}
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	return cmd, out, errb
}

// interruptExec runs script with 'boxer session exec' in the foreground
// and sends boxer SIGINT once the script has written its first line.
func interruptExec(t *testing.T, id, script string) run {
	t.Helper()
	cmd, out, errb := pipeBoxer(t, "session", "exec", id, "--", "sh", "-c", script)
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	br := bufio.NewReader(out)
	first, _ := br.ReadString('\n')
	if first != "" {
		_ = cmd.Process.Signal(os.Interrupt)
	}
	rest, _ := io.ReadAll(br)
	err := cmd.Wait()
	r := run{stdout: first + string(rest), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	}
	return r
}

// processes is 'boxer session ps --json'.
func processes(t *testing.T, id string) []runner.ProcessInfo {
	t.Helper()
	r := boxer(t, nil, "session", "ps", id, "--json")
	var ps []runner.ProcessInfo
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ps) != nil {
		t.Fatalf("session ps: %d %q %q", r.code, r.stdout, r.stderr)
	}
	return ps
}

// waitOutput waits until process ref of session id has written want.
func waitOutput(t *testing.T, id, ref, want string) {
	t.Helper()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "session", "attach", id, ref)
	cmd.Env = testEnv
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	found := make(chan bool, 1)
	var seen []string
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				found <- true
				return
			}
			seen = append(seen, sc.Text())
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			_ = cmd.Wait()
			ps := boxer(t, nil, "session", "ps", id)
			t.Fatalf("process %s ended without writing %q: it wrote %q, attach said %q (%v); session ps: %s %s", ref, want, seen, errb.String(), cmd.ProcessState, ps.stdout, ps.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("process %s did not write %q in 30s", ref, want)
	}
}

// TestSessionProcesses: commands in a session, in the foreground (output,
// stdin, exit code, a terminal) and in the background (a tag, ps,
// re-attach to what it wrote earlier, TERM it handles, KILL of its whole
// tree), from separate CLI processes through the session's keeper; a
// flood of output stays within the ring; a fork bomb in the background
// hits the session's pids limit and leaves the session usable; rm leaves
// nothing, the keeper included. On runc and runsc.
func TestSessionProcesses(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "python", "--runtime", rt, "--pids", "32", "--memory", "512m")
			r := sessionExec(t, "", id, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
			if r.stdout != "out\n" || r.stderr != "err\n" || r.code != 3 {
				t.Errorf("foreground: %d %q %q, want 3 \"out\" \"err\"", r.code, r.stdout, r.stderr)
			}
			if r := sessionExec(t, "line one\nline two\n", id, "cat"); r.stdout != "line one\nline two\n" || r.code != 0 {
				t.Errorf("stdin: %d %q %q", r.code, r.stdout, r.stderr)
			}
			if r := sessionExec(t, "", id, "no-such-program"); r.code != 127 || !strings.Contains(r.stderr, "no-such-program") {
				t.Errorf("a missing program: %d %q, want 127 naming it", r.code, r.stderr)
			}
			// (gVisor's terminal has no name under /dev/pts.)
			if r := sessionExec(t, "\n", id, "-t", "--", "sh", "-c", "stty size; test -t 0 && echo on a terminal"); !strings.Contains(r.stdout, "24 80") || !strings.Contains(r.stdout, "on a terminal") {
				t.Errorf("terminal: %d %q %q, want 24 80 on a terminal", r.code, r.stdout, r.stderr)
			}
			if r := sessionExec(t, "", id, "--env", "GREETING=hi there", "--cwd", "/tmp", "--", "sh", "-c", `echo "$GREETING in $(pwd) as $(id -u)"`); r.stdout != "hi there in /tmp as 65534\n" {
				t.Errorf("env and cwd: %d %q %q", r.code, r.stdout, r.stderr)
			}
			// boxer's SIGINT goes to the process, which ends as it chooses.
			if r := interruptExec(t, id, `trap 'echo got INT; exit 5' INT; echo ready; while :; do sleep 0.1; done`); r.code != 5 || r.stdout != "ready\ngot INT\n" {
				t.Errorf("SIGINT to boxer: %d %q %q, want 5 \"ready\" \"got INT\"", r.code, r.stdout, r.stderr)
			}

			// A background server that says it is ready, counts, and ends
			// with 7 on TERM.
			srv := `import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: (print("terminated", flush=True), sys.exit(7)))
print("ready", flush=True)
n = 0
while True:
    n += 1
    print("tick", n, flush=True)
    time.sleep(0.1)`
			r = sessionExec(t, "", id, "--bg", "--tag", "srv", "--", "python3", "-c", srv)
			if r.code != 0 || len(strings.Fields(r.stdout)) != 2 {
				t.Fatalf("background: %d %q %q", r.code, r.stdout, r.stderr)
			}
			waitOutput(t, id, "srv", "tick 5")
			ps := processes(t, id)
			last := ps[len(ps)-1]
			if last.Tag != "srv" || !last.Running || last.PID < 2 || last.Args[0] != "python3" {
				t.Errorf("ps: %+v, want srv running", last)
			}
			// A new attach gets what it wrote from the start.
			if r := boxer(t, nil, "session", "kill", id, "srv"); r.code != 0 {
				t.Fatalf("kill: %d %s", r.code, r.stderr)
			}
			r = boxer(t, nil, "session", "attach", id, "srv")
			if r.code != 7 || !strings.HasPrefix(r.stdout, "ready\ntick 1\n") || !strings.HasSuffix(r.stdout, "terminated\n") {
				t.Errorf("attach after TERM: %d %q, want 7 with all its output", r.code, r.stdout)
			}
			ps = processes(t, id)
			if last := ps[len(ps)-1]; last.Running || last.ExitCode == nil || *last.ExitCode != 7 {
				t.Errorf("ps after TERM: %+v, want exit 7", last)
			}
			if r := boxer(t, nil, "session", "kill", id, "srv"); r.code != 125 || !strings.Contains(r.stderr, "ended") {
				t.Errorf("kill of an ended process: %d %q", r.code, r.stderr)
			}
			if r := boxer(t, nil, "session", "kill", id, "nothing"); r.code != 125 || !strings.Contains(r.stderr, "no such process") {
				t.Errorf("kill of no process: %d %q", r.code, r.stderr)
			}

			// KILL ends the process and what it started.
			r = sessionExec(t, "", id, "--bg", "--tag", "tree", "--", "sh", "-c", "sleep 1001 & sleep 1002 & echo started; wait")
			waitOutput(t, id, "tree", "started")
			if r := boxer(t, nil, "session", "kill", "-s", "KILL", id, "tree"); r.code != 0 {
				t.Fatalf("kill -s KILL: %d %s", r.code, r.stderr)
			}
			if r := boxer(t, nil, "session", "attach", id, "tree"); r.code != 137 {
				t.Errorf("attach after KILL: %d, want 137", r.code)
			}
			count := `n=0; for p in /proc/[0-9]*; do case "$(cat $p/cmdline 2>/dev/null | tr '\0' ' ')" in "sleep 100"*) n=$((n+1));; esac; done; echo $n`
			if r := sessionExec(t, "", id, "--", "sh", "-c", count); r.stdout != "0\n" {
				t.Errorf("after KILL, sleeps left: %q %q", r.stdout, r.stderr)
			}

			// A flood of output: the ring keeps the last MiB, says how much
			// is gone, and the keeper stays small.
			sessionExec(t, "", id, "--bg", "--tag", "flood", "--", "python3", "-c", `import sys; sys.stdout.write("x" * (64 << 20)); print("END", flush=True)`)
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				ps := processes(t, id)
				if !ps[len(ps)-1].Running {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the flood did not end in 60s")
				}
			}
			r = boxer(t, nil, "session", "attach", id, "flood")
			if r.code != 0 || !strings.HasSuffix(r.stdout, "xEND\n") || len(r.stdout) > runner.DefaultRingBytes+10 || !strings.Contains(r.stderr, "bytes of earlier output are gone") {
				t.Errorf("flood: %d, %d bytes ending %q, stderr %q", r.code, len(r.stdout), r.stdout[max(0, len(r.stdout)-10):], r.stderr)
			}
			for _, pid := range leftover.Keepers(boxerBin) {
				if rss := vmRSS(pid); rss > 100<<20 {
					t.Errorf("keeper %d holds %d MiB after a 64 MiB flood", pid, rss>>20)
				}
			}

			// The interpreter of a python session is still there, beside.
			if res, _ := sessionCall(t, id, "print(6 * 7)"); res.Stdout != "42\n" {
				t.Errorf("session run beside processes: %+v", res)
			}
			if len(leftover.Keepers(boxerBin)) != 1 {
				t.Errorf("keepers: %v, want one", leftover.Keepers(boxerBin))
			}

			// A fork bomb in the background meets the pids limit; on runc
			// it can be ended, and the session still runs commands; rm
			// ends it on both.
			bomb := `import os, time
n = 0
for i in range(1000):
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
    except OSError:
        break
print("forked", n, flush=True)
time.sleep(60)`
			sessionExec(t, "", id, "--bg", "--tag", "bomb", "--", "python3", "-c", bomb)
			waitOutput(t, id, "bomb", "forked")
			if rt == "runc" {
				if r := boxer(t, nil, "session", "kill", "-s", "KILL", id, "bomb"); r.code != 0 {
					t.Errorf("kill of the bomb: %d %s", r.code, r.stderr)
				}
				if r := sessionExec(t, "", id, "echo", "alive"); r.stdout != "alive\n" {
					t.Errorf("after the bomb: %d %q %q", r.code, r.stdout, r.stderr)
				}
			} else {
				// gVisor counts the processes of the sandbox's user itself:
				// while the bomb holds them all, no process starts, not
				// even the one that would signal it (docs/sessions.md).
				r := boxer(t, nil, "session", "kill", "-s", "KILL", id, "bomb")
				if r.code != 0 && !strings.Contains(r.stderr, "try again") {
					t.Errorf("kill of the bomb under gVisor: %d %s", r.code, r.stderr)
				}
			}
			boxer(t, nil, "session", "rm", id)
			assertClean(t)
		})
	}
}

// vmRSS is a process's resident memory in bytes.
func vmRSS(pid int) int64 {
	data, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
