package main

import (
	"os"
	"runtime/debug"
)

// Most boxer commands make or reach one sandbox and exit, allocating 3-4 MiB
// in all. Go's collector starts with a 4 MiB target, so it ran once in each
// such process for nothing: 3 ms of CPU a CLI run, and again in the standby
// maker (docs/bench/2026-11-28.md). Commands start with a target of
// shortGCPercent (the first collection at 16 MiB of heap); the long-lived
// ones (serve, mcp, a session's keeper) put Go's default back, and a
// keeper, which lives as long as its session and holds what its processes
// write, collects harder as it nears keeperMemoryLimit. GOGC and
// GOMEMLIMIT, when set, win.
const shortGCPercent = 400

// shortLivedGC sets the collector's target of a command that exits soon.
func shortLivedGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(shortGCPercent)
	}
}

// longLivedGC puts back Go's default target, for a command that serves.
func longLivedGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}

// keeperMemoryLimit is a keeper's soft memory limit: what its processes'
// output holds (at most 1 MiB each, 64 processes) fits under it, and the
// keeper stays under the 100 MiB the documentation promises (its program
// text is the rest).
const keeperMemoryLimit = 64 << 20

// keeperGC sets the collector of a session's keeper: Go's default target
// and keeperMemoryLimit.
func keeperGC() {
	longLivedGC()
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(keeperMemoryLimit)
	}
}
