//go:build linux

// Command bench times one full sandbox cycle ("fresh hardened sandbox,
// python3 -c 'print(1)', collect the output, destroy") every way this host
// can run it, in one run so that all see the same machine: host python, runc
// run on a bundle made from boxer's own spec (the baseline), the same bundle
// as containerd's runc shim runs a task (taskmodel.go), ctr run, podman
// and docker (where installed; docker as a private dockerd on boxer's private
// containerd, started and stopped here), boxer run, boxer serve, and the
// runsc rows. It prints one table: p50 and p90 at one worker, runs per
// second at one and four workers, and each p50 as a ratio to runc run. Then
// boxer's memory: peak RSS while a sandbox prints 1 GiB, and the server's
// RSS over many runs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/boxer-dev/boxer/daemon"
)

func main() {
	n := flag.Int("n", 20, "cycles per contender at one worker (four workers run 2n)")
	rssRuns := flag.Int("rss-runs", 1000, "runs through boxer serve while its RSS is sampled")
	boxerBin := flag.String("boxer", "boxer", "boxer binary")
	table := flag.Bool("table", true, "time the contenders (false: memory figures only)")
	only := flag.String("only", "", "run some rows only: ready-session, preload, fleet, snapshot, serve (warm, with and without an allowlist), exec (commands in a live session, issue 43), build (Dockerfile builds, issue 46) or e2b-pause (E2B pause to disk and fork on runsc, issue 45)")
	flag.Parse()
	hostBefore = readHostSettings()
	var err error
	switch {
	case *only == "ready-session":
		var r row
		if r, err = benchReadySession(*n, *boxerBin, address()); err == nil {
			printReadySession(r)
		}
	case *only == "preload":
		var res preloadResult
		if res, err = benchPreload(*n, *boxerBin, address()); err == nil {
			printPreload(res)
		}
	case *only == "fleet":
		var direct, hop row
		if direct, err = benchSession(*n, *boxerBin, address()); err == nil {
			if hop, err = benchFleet(*n, *boxerBin, address()); err == nil {
				fmt.Printf("%s p50 %.1f ms, %s p50 %.1f ms: %.2f\n", direct.name, ms(median(direct.times)), hop.name, ms(median(hop.times)), float64(median(hop.times))/float64(median(direct.times)))
			}
		}
	case *only == "snapshot":
		var rows []row
		if rows, err = benchSnapshot(*n, *boxerBin, address()); err == nil {
			times := map[string]time.Duration{}
			for _, r := range rows {
				times[r.name] = median(r.times)
				fmt.Printf("%s: p50 %.1f ms, p90 %.1f ms\n", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)))
			}
			printSnapshotRatios(times)
		}
	case *only == "serve":
		err = benchServeOnly(*n, *boxerBin, address())
	case *only == "exec":
		err = benchExecOnly(*n, *boxerBin, address())
	case *only == "e2b-pause":
		var rows []row
		if rows, err = benchE2BPause(*n, *boxerBin, address()); err == nil {
			printE2BPause(rows)
		}
	case *only == "build":
		var rows []row
		if rows, err = benchBuild(*n, *boxerBin, address()); err == nil {
			printBuild(rows)
		}
	case *only != "":
		err = fmt.Errorf("-only %q: the rows to run alone are ready-session, preload, fleet, snapshot, serve, exec, build and e2b-pause", *only)
	case *table:
		err = run(*n, *rssRuns, *boxerBin)
	default:
		err = benchMemory(*boxerBin, address(), *rssRuns)
	}
	// Checked when every engine the bench started has stopped: whatever
	// the figures, a changed host fails the run.
	if herr := checkHost(hostBefore, "at the end"); herr != nil {
		err = errors.Join(err, herr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// hostBefore is the host's settings as the bench found them.
var hostBefore hostSettings

// address is the containerd boxer uses: $BOXER_ADDRESS, the system one if
// it answers, else boxer's private one.
func address() string {
	if a := os.Getenv("BOXER_ADDRESS"); a != "" {
		return a
	}
	cfg := daemon.FromEnv()
	if cfg.SystemAddress != "" && daemon.Answers(cfg.SystemAddress) {
		return cfg.SystemAddress
	}
	return cfg.Address()
}
