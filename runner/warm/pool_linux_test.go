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

	// A run that starts and ends within the wait restarts it. On a
	// loaded host the test's own sleep may outlast the wait (settle then
	// rightly returns before the run), or this goroutine be put off
	// around the run: the case is tried up to five times, and fails only
	// if settle never waited a whole settleTime after a run began.
	var waited []time.Duration
	for range 5 {
		go func() {
			p.settle(ctx, func() bool { return false })
			done <- time.Now()
		}()
		time.Sleep(settleTime / 2)
		began := time.Now()
		p.enter()
		p.leave()
		d := (<-done).Sub(began)
		if d >= settleTime {
			waited = nil
			break
		}
		waited = append(waited, d)
	}
	if waited != nil {
		t.Errorf("settle returned %v after a run began, in five tries, want at least %s once", waited, settleTime)
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
