package main

import (
	"math"
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

// noMemoryLimit is the runtime's memory limit when none is set.
const noMemoryLimit = math.MaxInt64

// TestKeeperGC: a keeper collects with Go's default target and a memory
// limit, unless GOGC and GOMEMLIMIT say otherwise.
func TestKeeperGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(noMemoryLimit))
	for _, tc := range []struct {
		gogc, gomemlimit string
		wantPercent      int
		wantLimit        int64
	}{
		{"", "", 100, keeperMemoryLimit},
		{"50", "", 50, keeperMemoryLimit},
		{"", "200MiB", 100, noMemoryLimit},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.gomemlimit)
		debug.SetGCPercent(50)
		debug.SetMemoryLimit(noMemoryLimit)
		keeperGC()
		if got := debug.SetGCPercent(100); got != tc.wantPercent {
			t.Errorf("GOGC=%q: target %d, want %d", tc.gogc, got, tc.wantPercent)
		}
		if got := debug.SetMemoryLimit(noMemoryLimit); got != tc.wantLimit {
			t.Errorf("GOMEMLIMIT=%q: limit %d, want %d", tc.gomemlimit, got, tc.wantLimit)
		}
	}
}
