//go:build linux

package main

// The whole table of make bench: which rows it times, in which order, and
// how: every contender at one worker interleaved, then at four; then the
// server's rows.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/runner"
)

// contender is one way to run the cycle. once runs it and checks that the
// sandbox printed 1.
type contender struct {
	name  string
	group string // "" or "runsc": runsc rows are compared to ctr run on runsc
	once  func(i int) error
	times []time.Duration // one worker
	// cpu is the whole machine's busy CPU time over the runs at one
	// worker, until the machine is quiet again (a standby's making, what
	// containerd does late for the run: its garbage collection, a gVisor
	// sandbox settling). Each run starts on a quiet machine.
	cpu   time.Duration
	rate4 float64 // runs per second, four workers
	// failed counts the runs that failed at four workers; failure is the
	// first one's error.
	failed  int
	failure string
}

// command makes a contender's once from a command line.
func command(f func(i int) *exec.Cmd) func(int) error {
	return func(i int) error {
		cmd := f(i)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%v: %s", err, lastLine(errb.String()))
		}
		if strings.TrimSpace(out.String()) != "1" {
			return fmt.Errorf("printed %q", out.String())
		}
		return nil
	}
}

// run times every row in one run, so that all see the same machine, and
// prints the table, the ratios to their targets and boxer's memory.
func run(n, rssRuns int, boxerBin string) error {
	cfg := daemon.FromEnv()
	address := address()
	work, err := os.MkdirTemp("", "boxer-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// runc's, podman's and docker's cgroups go under one parent, removed at
	// the end in every hierarchy.
	defer removeCgroups(cgroupParent)
	layer, err := pythonLayer(cfg.Cache)
	if err != nil {
		return err
	}
	if err := makeBundle(work, layer); err != nil {
		return fmt.Errorf("making runc bundle: %w", err)
	}
	// Every runc row runs the runc boxer's private containerd runs (the
	// pinned one of 'make deps'), so that rows differ by engine only.
	runc, err := daemon.RuntimeBinary("runc")
	if err != nil {
		return fmt.Errorf("runc not found: run 'make deps'")
	}
	runsc, runscErr := daemon.RuntimeBinary("runsc")
	python, err := runner.LookupPreset("python")
	if err != nil {
		return err
	}
	cs := baselines(work, runc, address, python.Image)
	// podman and docker with the same hardening, each with its own storage
	// under the bench's directory, the python layer imported as an image.
	if c, stop, err := podman(work, layer, runc); err != nil {
		fmt.Fprintf(os.Stderr, "bench: podman left out: %v\n", err)
	} else if c != nil {
		defer stop()
		cs = append(cs, c)
	}
	if c, stop, err := docker(work, layer, address, runc); err != nil {
		fmt.Fprintf(os.Stderr, "bench: docker left out: %v\n", err)
	} else if c != nil {
		defer stop()
		cs = append(cs, c)
	}
	if err := checkHost(hostBefore, "after podman and docker started"); err != nil {
		return err
	}
	// standbys is how many standby contenders there are: each leaves one,
	// so before a run of one, as many wait (the others' and its own).
	standbys := 1
	cs = append(cs, boxerRuns(boxerBin, address)...)
	defer endStandbys(boxerBin)
	if runscErr == nil {
		wrapper, err := runscWrapper(boxerBin, address)
		if err != nil {
			return err
		}
		cs = append(cs, runscRows(boxerBin, address, python.Image, wrapper)...)
		standbys++
	}
	if err := timeContenders(cs, n, address, standbys); err != nil {
		return err
	}
	serve, err := serverRows(n, boxerBin, address, runscErr == nil)
	if err != nil {
		return err
	}
	procs, err := benchProcs(n, boxerBin, address, work, runc, runscErr == nil)
	if err != nil {
		return err
	}
	e2bCommands, err := benchE2BCommands(n, boxerBin, address)
	if err != nil {
		return err
	}
	serve = append(append(serve, procs...), e2bCommands...)
	preload, err := benchPreload(n, boxerBin, address)
	if err != nil {
		return err
	}
	builds, err := benchBuild(min(n, 5), boxerBin, address)
	if err != nil {
		return err
	}
	var pauses []row
	if runscErr == nil {
		if pauses, err = benchE2BPause(min(n, 3), boxerBin, address); err != nil {
			return err
		}
	}
	report(cs, serve, n, boxerBin, runc, runsc, runscErr == nil)
	printPreload(preload)
	printBuild(builds)
	if pauses != nil {
		printE2BPause(pauses)
	}
	return benchMemory(boxerBin, address, rssRuns)
}

// timeContenders fills in each contender's figures: its runs at one
// worker, interleaved with the others' and each on a quiet machine, and
// its rate at four workers.
func timeContenders(cs []*contender, n int, address string, standbys int) error {
	// One warm-up each (page cache, first view of the image), then n
	// cycles interleaved, then four workers per contender.
	for _, c := range cs {
		if err := c.once(-1); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	progress("%d contenders, %d cycles each at one worker", len(cs), n)
	for i := 0; i < n; i++ {
		for _, c := range cs {
			// Each run starts on a quiet machine: the standbys are made
			// (their makers asleep), which a standby run needs anyway.
			if err := standbyReady(address, standbys); err != nil {
				return fmt.Errorf("%s run %d: %w", c.name, i, err)
			}
			busy := busyCPU()
			start := time.Now()
			if err := c.once(i); err != nil {
				return fmt.Errorf("%s run %d: %w", c.name, i, err)
			}
			c.times = append(c.times, time.Since(start))
			// A standby run's maker removes the run's sandbox and makes
			// the next standby after the run: its CPU is the run's too.
			if err := standbyReady(address, standbys); err != nil {
				return fmt.Errorf("%s run %d: %w", c.name, i, err)
			}
			// What the run set going (a maker's teardown, containerd's
			// garbage collection) is its own, not the next row's.
			waitQuiet()
			c.cpu += busyCPU() - busy
		}
	}
	for _, c := range cs {
		progress("%s: %d runs at four workers", c.name, 2*n)
		// A failed run is counted and shown, not fatal: one flaky
		// contender must not cost the whole table.
		_, rate, failed, err := workers(4, 2*n, func(i int) error { return c.once(1000 + i) })
		c.rate4, c.failed = rate, failed
		if err != nil {
			c.failure = err.Error()
		}
	}
	return nil
}

// serverRows are the rows that go through boxer serve: one-shot runs warm
// and cold, sessions, a fleet's hop, a ready session, an exec, E2B's API,
// resume after pause and, on runsc, restore from a checkpoint.
func serverRows(n int, boxerBin, address string, withRunsc bool) ([]row, error) {
	// boxer serve: warm and cold, one request at a time back to back, one
	// request every half second (an agent's pace), and four clients.
	var serve []row
	groups := [][]string{{"python", "python:net"}, {""}}
	if withRunsc {
		groups = append(groups, []string{"python:runsc"})
	}
	for _, warms := range groups {
		rows, err := benchServe(n, boxerBin, address, warms...)
		if err != nil {
			return nil, err
		}
		serve = append(serve, rows...)
	}
	sessionRow, err := benchSession(n, boxerBin, address)
	if err != nil {
		return nil, err
	}
	serve = append(serve, sessionRow)
	fleet, err := benchFleet(n, boxerBin, address)
	if err != nil {
		return nil, err
	}
	serve = append(serve, fleet)
	readyRow, err := benchReadySession(n, boxerBin, address)
	if err != nil {
		return nil, err
	}
	serve = append(serve, readyRow)
	execRow, err := benchExec(n, boxerBin, address)
	if err != nil {
		return nil, err
	}
	serve = append(serve, execRow)
	runtimes := []string{"runc"}
	if withRunsc {
		runtimes = append(runtimes, "runsc")
	}
	e2bRows, err := benchE2B(n, boxerBin, address)
	if err != nil {
		return nil, err
	}
	serve = append(serve, e2bRows...)
	for _, rt := range runtimes {
		resumeRow, err := benchResume(n, boxerBin, address, rt)
		if err != nil {
			return nil, err
		}
		serve = append(serve, resumeRow)
	}
	if withRunsc {
		snapRows, err := benchSnapshot(n, boxerBin, address)
		if err != nil {
			return nil, err
		}
		serve = append(serve, snapRows...)
	}
	return serve, nil
}
