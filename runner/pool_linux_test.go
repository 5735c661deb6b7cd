package runner

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
)

// TestSettleWaitsForQuiet: background work waits while a run is under way
// and until none has started for settleTime, and goes at once when urgent.
func TestSettleWaitsForQuiet(t *testing.T) {
	p := &pool{}
	ctx := context.Background()

	p.enter()
	done := make(chan time.Time, 1)
	go func() {
		p.settle(ctx, func() bool { return false })
		done <- time.Now()
	}()
	time.Sleep(3 * settleTime)
	select {
	case <-done:
		t.Fatal("settle returned while a run was under way")
	default:
	}
	left := time.Now()
	p.leave()
	if at := <-done; at.Sub(left) < settleTime {
		t.Errorf("settle returned %s after the run ended, want at least %s", at.Sub(left), settleTime)
	}

	// A run that starts and ends within the wait restarts it.
	go func() {
		p.settle(ctx, func() bool { return false })
		done <- time.Now()
	}()
	time.Sleep(settleTime / 2)
	p.enter()
	p.leave()
	restarted := time.Now()
	if at := <-done; at.Sub(restarted) < settleTime/2 {
		t.Errorf("settle returned %s after a run, want about %s", at.Sub(restarted), settleTime)
	}

	// Urgent work does not wait, busy or not.
	p.enter()
	defer p.leave()
	start := time.Now()
	p.settle(ctx, func() bool { return true })
	if d := time.Since(start); d > time.Second {
		t.Errorf("urgent settle took %s", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	p.settle(cctx, func() bool { return false }) // returns: ctx is done
}

// TestGated: the gate waits for a line, then execs the program with the
// sandbox's environment (dash's PWD removed unless the sandbox sets it).
func TestGated(t *testing.T) {
	args := []string{"python3", "-u", "/code/main.py"}
	got := gated(args, []string{"PATH=/usr/bin", "HOME=/workspace"})
	want := []string{"/bin/sh", "-c", `read -r _ && unset PWD && exec "$@"`, "sh", "python3", "-u", "/code/main.py"}
	if !slices.Equal(got, want) {
		t.Errorf("gated = %q, want %q", got, want)
	}
	got = gated(args, []string{"PWD=/workspace"})
	if got[2] != `read -r _ && exec "$@"` {
		t.Errorf("with PWD set, the gate is %q", got[2])
	}
}

// TestRunDirVerdict: the reaper never removes a run directory whose owner
// file is being written (missing or empty) unless it is old, nor one whose
// owner lives.
func TestRunDirVerdict(t *testing.T) {
	missing := os.ErrNotExist
	for _, c := range []struct {
		name  string
		owner string
		err   error
		age   time.Duration
		want  dirVerdict
	}{
		{"being made, no owner yet", "", missing, time.Second, keepDir},
		{"being made, owner half-written", "", nil, time.Second, keepDir},
		{"abandoned before its owner", "", missing, 2 * time.Minute, removeDir},
		{"live owner", selfOwner(), nil, time.Hour, keepDir},
		{"dead owner", "1:0", nil, time.Second, removeUnlessContainer},
		{"garbage owner", "x", nil, time.Second, removeUnlessContainer},
	} {
		if got := runDirVerdict([]byte(c.owner), c.err, c.age); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
