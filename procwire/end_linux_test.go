package procwire

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerDies: a server killed under its client breaks the channel
// with ErrServerGone, and every wait returns it.
func TestServerDies(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	ctx := ctxFor(t)
	p, err := c.Start(ctx, Spec{Args: []string{"sleep", "100"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscallKill(p.PID()) })
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); !errors.Is(err, ErrServerGone) {
		t.Errorf("wait after the server died: %v, want %v", err, ErrServerGone)
	}
	if _, err := c.Start(ctx, Spec{Args: []string{"true"}, Env: env}); !errors.Is(err, ErrServerGone) {
		t.Errorf("start after the server died: %v", err)
	}
}

// TestServerSignalled: a server ended by SIGTERM (as boxer-init passes
// on a runtime's kill) ends its processes, and their groups, first.
func TestServerSignalled(t *testing.T) {
	s := startServer(t)
	c := dial(t, s, Limits{})
	ctx := ctxFor(t)
	p, err := c.Start(ctx, Spec{Args: []string{"sh", "-c", "sleep 100 & echo $!; wait"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	readUntil(t, p.Stdout(), "\n", &seen)
	child, err := strconv.Atoi(strings.TrimSpace(seen.String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscallKill(child) })
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); !errors.Is(err, ErrServerGone) {
		t.Errorf("wait after the server's SIGTERM: %v", err)
	}
	s.stop(t)
	if code := s.cmd.ProcessState.ExitCode(); code != 128+15 {
		t.Errorf("the server exited %d, want 143", code)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(p.PID()) || alive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's processes %d and %d outlived it", p.PID(), child)
		}
	}
}
