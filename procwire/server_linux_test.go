package procwire

import (
	"bytes"
	"context"
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

// syscallKill ends a process a test left behind.
func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// env is the environment of the processes the tests start.
var env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

var (
	buildOnce sync.Once
	procdBin  string
	buildErr  error
)

// TestMain removes the build of boxer-procd after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if procdBin != "" {
		os.RemoveAll(filepath.Dir(procdBin))
	}
	os.Exit(code)
}

// procd builds boxer-procd from init/ as the Makefile does, once a test
// binary: musl-gcc is a build dependency ('make deps' installs it).
func procd(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		cc, err := exec.LookPath("musl-gcc")
		if err != nil {
			buildErr = fmt.Errorf("musl-gcc is needed to build boxer-procd: run 'make deps' (or apt-get install musl-tools)")
			return
		}
		dir, err := os.MkdirTemp("", "boxer-procd-test")
		if err != nil {
			buildErr = err
			return
		}
		procdBin = filepath.Join(dir, "boxer-procd")
		src, err := filepath.Glob("../init/boxer-procd*.c")
		if err != nil || len(src) == 0 {
			buildErr = fmt.Errorf("no ../init/boxer-procd*.c: %v", err)
			return
		}
		args := append([]string{"-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", procdBin}, src...)
		out, err := exec.Command(cc, args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building boxer-procd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return procdBin
}

// server is a boxer-procd driven through pipes, as a session's FIFOs
// will drive it: in is its stdin, out its stdout, both held by the test
// (the shim's part) across clients.
type server struct {
	cmd     *exec.Cmd
	in, out *os.File
	stderr  bytes.Buffer
	once    sync.Once
}

func startServer(t testing.TB, wrap ...string) *server {
	t.Helper()
	bin := procd(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{in: inW, out: outR}
	args := append(append([]string{}, wrap...), bin)
	s.cmd = exec.Command(args[0], args[1:]...)
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = inR, outW, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting boxer-procd: %v", err)
	}
	inR.Close()
	outW.Close()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop closes the server's stdin (it ends its processes and exits) and
// waits for it.
func (s *server) stop(t testing.TB) {
	s.once.Do(func() { s.stopOnce(t) })
}

func (s *server) stopOnce(t testing.TB) {
	// Its stdout closes too: a server blocked writing to a client that
	// stopped reading ends on EPIPE.
	s.in.Close()
	s.out.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
		t.Errorf("boxer-procd did not exit 10 s after its stdin closed")
	}
	if s.stderr.Len() > 0 {
		t.Logf("boxer-procd's stderr: %s", s.stderr.String())
	}
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t testing.TB, s *server, lim Limits) *Client {
	t.Helper()
	c := New(s.out, s.in, lim)
	procs, err := c.Hello(ctxFor(t))
	if err != nil {
		t.Fatalf("hello: %v", err)
	}
	if len(procs) != 0 {
		t.Fatalf("a new server lists %d processes", len(procs))
	}
	return c
}

// result is what a process wrote and how it ended.
type result struct {
	stdout, stderr string
	exit           Exit
}

// run starts spec, feeds it stdin (closed after), and collects it.
func run(t testing.TB, c *Client, spec Spec, stdin []byte) result {
	t.Helper()
	ctx := ctxFor(t)
	spec.Stdin = spec.Stdin || stdin != nil
	p, err := c.Start(ctx, spec)
	if err != nil {
		t.Fatalf("starting %q (%d arguments): %v", spec.Args[0], len(spec.Args), err)
	}
	return collect(t, p, stdin)
}

func collect(t testing.TB, p *Process, stdin []byte) result {
	t.Helper()
	ctx := ctxFor(t)
	var wg sync.WaitGroup
	var out, errb []byte
	var outErr, errErr, inErr error
	wg.Add(2)
	go func() { defer wg.Done(); out, outErr = io.ReadAll(p.Stdout()) }()
	go func() { defer wg.Done(); errb, errErr = io.ReadAll(p.Stderr()) }()
	if stdin != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.Stdin()
			_, inErr = w.Write(stdin)
			if err := w.Close(); inErr == nil {
				inErr = err
			}
		}()
	}
	wg.Wait()
	for _, err := range []error{outErr, errErr, inErr} {
		if err != nil {
			t.Fatalf("relaying process %d: %v", p.ID(), err)
		}
	}
	x, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("waiting for process %d: %v", p.ID(), err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatalf("releasing process %d: %v", p.ID(), err)
	}
	return result{stdout: string(out), stderr: string(errb), exit: x}
}

// TestStartExit: processes start with argv, env and cwd, their output
// comes back whole, and their ends are reported as code or signal.
func TestStartExit(t *testing.T) {
	// nohup: the server is started with SIGHUP ignored, which its
	// processes must not inherit.
	s := startServer(t, "nohup")
	c := dial(t, s, Limits{})
	tests := []struct {
		name   string
		spec   Spec
		stdout string
		stderr string
		exit   Exit
	}{
		{name: "true", spec: Spec{Args: []string{"true"}}},
		{name: "echo", spec: Spec{Args: []string{"echo", "hello", "world"}}, stdout: "hello world\n"},
		{name: "exit 3", spec: Spec{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, stdout: "out\n", stderr: "err\n", exit: Exit{Code: 3}},
		{name: "killed", spec: Spec{Args: []string{"sh", "-c", "kill -KILL $$"}}, exit: Exit{Code: -1, Signal: 9}},
		{name: "env and cwd", spec: Spec{Args: []string{"sh", "-c", `echo "$FOO" "$(pwd)"`}, Env: append([]string{"FOO=bar"}, env...), Cwd: "/tmp"}, stdout: "bar /tmp\n"},
		{name: "only its env", spec: Spec{Args: []string{"/usr/bin/env"}, Env: []string{"ONLY=1"}}, stdout: "ONLY=1\n"},
		{name: "own group", spec: Spec{Args: []string{"sh", "-c", `ps -o pid=,pgid= -p $$`}}},
		// Nothing of the server's leaks: ls's own directory is 3.
		// Nothing blocked or ignored: a shell reports its own SIGINT, SIGQUIT not.
		{name: "signals", spec: Spec{Args: []string{"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"}}, stdout: "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"},
		{name: "only its stdio", spec: Spec{Args: []string{"ls", "/proc/self/fd"}}, stdout: "0\n1\n2\n3\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spec.Env == nil {
				tc.spec.Env = env
			}
			got := run(t, c, tc.spec, nil)
			if tc.name == "own group" {
				f := strings.Fields(got.stdout)
				if len(f) != 2 || f[0] != f[1] {
					t.Errorf("pid and pgid %q: want a group of its own", got.stdout)
				}
				return
			}
			if got.stdout != tc.stdout || got.stderr != tc.stderr || got.exit != tc.exit {
				t.Errorf("got %q %q %+v, want %q %q %+v", got.stdout, got.stderr, got.exit, tc.stdout, tc.stderr, tc.exit)
			}
		})
	}

	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fails := []struct {
		name string
		spec Spec
		want string
	}{
		{"not found", Spec{Args: []string{"no-such-program"}, Env: env}, `exec: "no-such-program": executable file not found in $PATH`},
		{"no cwd", Spec{Args: []string{"true"}, Env: env, Cwd: "/no/such/dir"}, "chdir to /no/such/dir: No such file or directory"},
		{"not executable", Spec{Args: []string{plain}, Env: env}, `exec: "` + plain + `": Permission denied`},
	}
	for _, tc := range fails {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Start(ctxFor(t), tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("start = %v, want %q", err, tc.want)
			}
		})
	}
	if err := c.Err(); err != nil {
		t.Errorf("the channel broke: %v", err)
	}
}

// TestStdinCat: a MiB through cat comes back byte for byte, its stdin
// sent under the server's credit.
func TestStdinCat(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	in := make([]byte, 1<<20)
	for i := range in {
		in[i] = byte(i*7 + i>>11)
	}
	got := run(t, c, Spec{Args: []string{"cat"}, Env: env}, in)
	if !bytes.Equal([]byte(got.stdout), in) {
		t.Errorf("cat returned %d bytes, want the %d sent, byte for byte", len(got.stdout), len(in))
	}
	if got.exit != (Exit{}) {
		t.Errorf("cat ended %+v", got.exit)
	}
}

// readUntil reads r until what it has read (into seen) contains want,
// for 10 s at most: a read that never returns fails the test.
func readUntil(t *testing.T, r io.Reader, want string, seen *strings.Builder) {
	t.Helper()
	var mu sync.Mutex
	got := seen.String()
	done := make(chan error, 1)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			mu.Lock()
			got += string(b[:n])
			found := strings.Contains(got, want)
			mu.Unlock()
			if found || err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		mu.Lock()
		defer mu.Unlock()
		seen.Reset()
		seen.WriteString(got)
		if !strings.Contains(got, want) {
			t.Fatalf("reading for %q: %v (read %q)", want, err, got)
		}
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no %q in 10 s (read %q)", want, got)
	}
}

// TestPTY: a process on a terminal sees a tty, its size, and the new
// size after a resize.
func TestPTY(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	got := run(t, c, Spec{Args: []string{"tty"}, Env: env, PTY: &Size{Rows: 24, Cols: 80}}, nil)
	if !strings.HasPrefix(got.stdout, "/dev/pts/") || got.exit != (Exit{}) {
		t.Errorf("tty on a terminal: %q %+v, want /dev/pts/N", got.stdout, got.exit)
	}

	p, err := c.Start(ctxFor(t), Spec{Args: []string{"sh", "-c", "stty size; read x; stty size"}, Env: env, Stdin: true, PTY: &Size{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	readUntil(t, p.Stdout(), "24 80", &seen)
	if err := p.Resize(Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stdin().Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, p.Stdout(), "30 100", &seen)
	rest, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	if x, err := p.Wait(ctxFor(t)); err != nil || x != (Exit{}) {
		t.Errorf("sh on a terminal ended %+v %v (output %q%q)", x, err, seen.String(), rest)
	}
	if n, err := p.Stderr().Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("a terminal's stderr read %d, %v; want end of file", n, err)
	}

	// The terminal is the process's controlling one: ^C on it is SIGINT
	// to its foreground group.
	p, err = c.Start(ctxFor(t), Spec{Args: []string{"sh", "-c", `trap 'echo got-int; exit 5' INT; echo ready; while :; do sleep 0.05; done`}, Env: env, Stdin: true, PTY: &Size{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	seen.Reset()
	readUntil(t, p.Stdout(), "ready", &seen)
	if _, err := p.Stdin().Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, p.Stdout(), "got-int", &seen)
	go io.Copy(io.Discard, p.Stdout())
	if x, err := p.Wait(ctxFor(t)); err != nil || x != (Exit{Code: 5}) {
		t.Errorf("sh after ^C on its terminal: %+v %v", x, err)
	}
}

// alive says whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestSignal: a signal to a process ends it alone; to its group, it ends
// what it started too.
func TestSignal(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	ctx := ctxFor(t)

	p, err := c.Start(ctx, Spec{Args: []string{"sleep", "100"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(15, false); err != nil {
		t.Fatal(err)
	}
	if x, err := p.Wait(ctx); err != nil || x != (Exit{Code: -1, Signal: 15}) {
		t.Errorf("sleep after SIGTERM: %+v %v", x, err)
	}

	p, err = c.Start(ctx, Spec{Args: []string{"sh", "-c", "sleep 100 & echo $!; sleep 100 & wait"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	readUntil(t, p.Stdout(), "\n", &seen)
	child, err := strconv.Atoi(strings.TrimSpace(seen.String()))
	if err != nil || !alive(child) {
		t.Fatalf("the background sleep: %q %v", seen.String(), err)
	}
	if err := p.Signal(9, true); err != nil {
		t.Fatal(err)
	}
	if x, err := p.Wait(ctx); err != nil || x.Signal != 9 {
		t.Errorf("sh after SIGKILL to its group: %+v %v", x, err)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the group's background sleep %d still runs", child)
		}
	}
}

// TestHundred: a hundred processes at once, each with its own output.
func TestHundred(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{MaxProcs: 128})
	ctx := ctxFor(t)
	procs := make([]*Process, 100)
	for i := range procs {
		p, err := c.Start(ctx, Spec{Args: []string{"sh", "-c", `read x; echo "$0 $x"`, strconv.Itoa(i)}, Env: env, Stdin: true})
		if err != nil {
			t.Fatalf("starting process %d: %v", i, err)
		}
		procs[i] = p
	}
	for _, p := range procs {
		if p.Info().Exited {
			t.Fatalf("process %d ended before its input", p.ID())
		}
	}
	var wg sync.WaitGroup
	results := make([]result, len(procs))
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = collect(t, p, []byte("ok\n"))
		}()
	}
	wg.Wait()
	for i, r := range results {
		if want := fmt.Sprintf("%d ok\n", i); r.stdout != want || r.exit != (Exit{}) {
			t.Errorf("process %d: %q %+v, want %q", i, r.stdout, r.exit, want)
		}
	}
}
