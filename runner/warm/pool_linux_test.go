package warm

import (
	"context"
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
	// Timed before the run starts, so that the test's own delays on a
	// loaded host (this goroutine put off between the run's end and a
	// clock read) cannot look like an early return: a settle that
	// missed the run returns half a settleTime after this.
	restarted := time.Now()
	p.enter()
	p.leave()
	if at := <-done; at.Sub(restarted) < settleTime {
		t.Errorf("settle returned %s after a run began, want at least %s", at.Sub(restarted), settleTime)
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
