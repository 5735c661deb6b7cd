package sandbox

import (
	"context"
	"testing"
	"time"
)

// TestRetryBackoff: 100 ms after a first failure, doubling to at most 10 s,
// from 100 ms again after a success.
func TestRetryBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // wait returns at once; only the intervals are checked
	var b RetryBackoff
	var got []time.Duration
	for range 9 {
		got = append(got, max(b.next, 100*time.Millisecond))
		b.Wait(ctx)
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("intervals %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if b.next != 0 {
		t.Fatalf("after reset, next = %v", b.next)
	}
}
