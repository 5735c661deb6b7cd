package sandbox

// How a background maker of sandboxes (a pool's, the ready sessions')
// spaces its attempts after failures.

import (
	"context"
	"time"
)

// RetryBackoff spaces the attempts of a background maker that failed:
// 100 ms after a first failure, doubling up to 10 s, from 100 ms again
// once one succeeds.
type RetryBackoff struct{ next time.Duration }

// Wait sleeps for the next interval, or until ctx ends.
func (b *RetryBackoff) Wait(ctx context.Context) {
	d := max(b.next, 100*time.Millisecond)
	b.next = min(2*d, 10*time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Reset starts the intervals again from 100 ms.
func (b *RetryBackoff) Reset() { b.next = 0 }
