package main

import (
	"runtime/debug"
	"testing"
)

func TestGCTargets(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		gogc string
		set  func()
		want int
	}{
		{"", shortLivedGC, 400},
		{"", longLivedGC, 100},
		// GOGC wins: neither touches the target it set.
		{"50", shortLivedGC, 50},
		{"50", longLivedGC, 50},
	} {
		t.Setenv("GOGC", tc.gogc)
		debug.SetGCPercent(50)
		tc.set()
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: target %d, want %d", tc.gogc, got, tc.want)
		}
	}
}
