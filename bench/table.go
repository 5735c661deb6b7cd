//go:build linux

package main

// The whole table of make bench: every row timed in one run, and printed
// with the ratios to their targets.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	ctr := filepath.Join(daemon.LibexecDir, "ctr")
	python, err := runner.LookupPreset("python")
	if err != nil {
		return err
	}
	image := python.Image
	ctrRun := func(name string, extra ...string) func(i int) *exec.Cmd {
		return func(i int) *exec.Cmd {
			args := append([]string{"-a", address, "-n", "boxer", "run", "--rm", "--read-only", "--seccomp",
				"--memory-limit", "268435456", "--cpus", "1", "--user", "65534:65534",
				"--mount", "type=tmpfs,src=tmpfs,dst=/tmp,options=nosuid:nodev:size=67108864"}, extra...)
			args = append(args, image, fmt.Sprintf("bench-%s-%d-%d", name, os.Getpid(), i+2), "python3", "-c", "print(1)")
			return exec.Command(ctr, args...)
		}
	}
	cs := []*contender{
		{name: "host python", once: command(func(int) *exec.Cmd { return exec.Command(hostPython(), "-c", "print(1)") })},
		{name: "runc run (bundle)", once: func(i int) error {
			// Writing its bundle (well under a millisecond) is timed with it.
			bundle, err := runBundle(work, i)
			if err != nil {
				return err
			}
			return command(func(int) *exec.Cmd {
				return exec.Command(runc, "run", "--bundle", bundle, fmt.Sprintf("bench-runc-%d-%d", os.Getpid(), i+2))
			})(i)
		}},
		{name: "runc create, start, delete", once: threeStep(runc, work, &reaping{})},
		{name: "ctr run", once: command(ctrRun("ctr"))},
	}
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
	cs = append(cs, &contender{name: "boxer run", once: command(func(int) *exec.Cmd {
		return noStandby(exec.Command(boxerBin, "--address", address, "run", "--lang", "python", "-c", "print(1)"))
	})}, &contender{name: "boxer run, standby", once: command(func(int) *exec.Cmd {
		// Each run takes the standby the one before left.
		cmd := exec.Command(boxerBin, "--address", address, "run", "--lang", "python", "-c", "print(1)")
		cmd.Env = append(os.Environ(), "BOXER_STANDBY=1", "BOXER_STANDBY_IDLE=2m")
		return cmd
	})}, &contender{name: "boxer run, network allowlist", once: command(func(int) *exec.Cmd {
		// The cost of a link out (namespace, veth, rules, proxy and
		// resolver), with a destination the program does not use.
		return noStandby(exec.Command(boxerBin, "--address", address, "run", "--allow-host", benchHost, "--lang", "python", "-c", "print(1)"))
	})})
	defer endStandbys(boxerBin)
	if runscErr == nil {
		wrapper, err := runscWrapper(boxerBin, address)
		if err != nil {
			return err
		}
		cs = append(cs,
			&contender{name: "ctr run, runsc", group: "runsc", once: command(ctrRun("ctr-runsc", "--runc-binary", wrapper))},
			&contender{name: "boxer run, runsc", group: "runsc", once: command(func(int) *exec.Cmd {
				return noStandby(exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "python", "-c", "print(1)"))
			})},
			&contender{name: "boxer run, runsc, standby", group: "runsc", once: command(func(int) *exec.Cmd {
				cmd := exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "python", "-c", "print(1)")
				cmd.Env = append(os.Environ(), "BOXER_STANDBY=1", "BOXER_STANDBY_IDLE=2m")
				return cmd
			})})
		standbys++
	}

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

	// boxer serve: warm and cold, one request at a time back to back, one
	// request every half second (an agent's pace), and four clients.
	var serve []row
	groups := [][]string{{"python", "python:net"}, {""}}
	if runscErr == nil {
		groups = append(groups, []string{"python:runsc"})
	}
	for _, warms := range groups {
		rows, err := benchServe(n, boxerBin, address, warms...)
		if err != nil {
			return err
		}
		serve = append(serve, rows...)
	}
	sessionRow, err := benchSession(n, boxerBin, address)
	if err != nil {
		return err
	}
	serve = append(serve, sessionRow)
	fleet, err := benchFleet(n, boxerBin, address)
	if err != nil {
		return err
	}
	serve = append(serve, fleet)
	readyRow, err := benchReadySession(n, boxerBin, address)
	if err != nil {
		return err
	}
	serve = append(serve, readyRow)
	execRow, err := benchExec(n, boxerBin, address)
	if err != nil {
		return err
	}
	serve = append(serve, execRow)
	runtimes := []string{"runc"}
	if runscErr == nil {
		runtimes = append(runtimes, "runsc")
	}
	e2bRows, err := benchE2B(n, boxerBin, address)
	if err != nil {
		return err
	}
	serve = append(serve, e2bRows...)
	for _, rt := range runtimes {
		resumeRow, err := benchResume(n, boxerBin, address, rt)
		if err != nil {
			return err
		}
		serve = append(serve, resumeRow)
	}
	if runscErr == nil {
		snapRows, err := benchSnapshot(n, boxerBin, address)
		if err != nil {
			return err
		}
		serve = append(serve, snapRows...)
	}
	preload, err := benchPreload(n, boxerBin, address)
	if err != nil {
		return err
	}

	host, _ := os.Hostname()
	fmt.Printf("\nboxer bench, %s, %s: `python3 -c 'print(1)'` in a fresh hardened sandbox, %d cycles at one worker (interleaved), %d at four\n\n",
		host, time.Now().Format(time.RFC3339), n, 2*n)
	fmt.Printf("runc: %s (%s)", runc, versionLine(runc))
	if runscErr == nil {
		fmt.Printf("; runsc: %s (%s)", runsc, versionLine(runsc))
	}
	fmt.Print("\n\n")
	fmt.Println("| | p50 ms | p90 ms | runs/s, 1 worker | runs/s, 4 workers | p50 / runc run | machine CPU ms per run, 1 worker |")
	fmt.Println("|---|---|---|---|---|---|---|")
	base := median(cs[1].times)
	runc4 := cs[1].rate4
	runcCPU := cs[1].cpu / time.Duration(len(cs[1].times))
	var taskModel4 float64
	for _, c := range cs {
		if c.name == "runc create, start, delete" {
			taskModel4 = c.rate4
		}
	}
	var ctrRunsc time.Duration
	for _, c := range cs {
		if c.name == "ctr run, runsc" {
			ctrRunsc = median(c.times)
		}
		rate4 := fmt.Sprintf("%.1f", c.rate4)
		if c.failed > 0 {
			rate4 += fmt.Sprintf(" (%d of %d failed)", c.failed, 2*n)
		}
		fmt.Printf("| %s | %.1f | %.1f | %.1f | %s | %.2f | %.0f |\n", c.name, ms(median(c.times)), ms(pct(c.times, 0.9)),
			float64(len(c.times))/sum(c.times).Seconds(), rate4, float64(median(c.times))/float64(base), ms(c.cpu/time.Duration(len(c.times))))
	}
	for _, r := range serve {
		rate4 := "—"
		if r.rate4 > 0 {
			rate4 = fmt.Sprintf("%.1f", r.rate4)
		}
		rate1 := "—"
		if r.rate1 > 0 {
			rate1 = fmt.Sprintf("%.1f", r.rate1)
		}
		cpu := "—"
		if r.cpu > 0 {
			cpu = fmt.Sprintf("%.0f", ms(r.cpu/time.Duration(len(r.times))))
		}
		fmt.Printf("| %s | %.1f | %.1f | %s | %s | %.2f | %s |\n", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)), rate1, rate4, float64(median(r.times))/float64(base), cpu)
	}
	fmt.Println()
	for _, c := range cs {
		if c.failed > 0 {
			fmt.Printf("%s at four workers, first failure: %s\n", c.name, c.failure)
		}
	}
	var boxerRun time.Duration
	for _, c := range cs {
		if c.name == "boxer run" {
			boxerRun = median(c.times)
		}
	}
	for _, c := range cs {
		switch c.name {
		case "boxer run, network allowlist":
			fmt.Printf("boxer run, network allowlist / boxer run = %.2f (target <= 1.15)\n", float64(median(c.times))/float64(boxerRun))
		case "boxer run":
			fmt.Printf("boxer run (cold) / runc run = %.2f (target <= 2.5)\n", float64(median(c.times))/float64(base))
			fmt.Printf("boxer run (cold), runs/s at four workers / runc run's = %.2f (target >= 0.8)\n", c.rate4/runc4)
		case "runc create, start, delete":
			fmt.Printf("runc create, start, delete, runs/s at four workers / runc run's = %.2f (no containerd: the most any engine on containerd's runc shim can reach)\n", c.rate4/runc4)
		case "boxer run, standby":
			fmt.Printf("boxer run, standby / runc run = %.2f (target <= 1.0)\n", float64(median(c.times))/float64(base))
			if cold := rate4Of(cs, "boxer run"); cold > 0 {
				fmt.Printf("boxer run, standby, runs/s at four workers / boxer run (cold)'s = %.2f (target >= 1.0)\n", c.rate4/cold)
			}
		case "boxer run, runsc":
			if ctrRunsc > 0 {
				fmt.Printf("boxer run, runsc / ctr run, runsc = %.2f (target <= 0.6)\n", float64(median(c.times))/float64(ctrRunsc))
			}
		case "boxer run, runsc, standby":
			if ctrRunsc > 0 {
				fmt.Printf("boxer run, runsc, standby / ctr run, runsc = %.2f (target <= 0.4)\n", float64(median(c.times))/float64(ctrRunsc))
			}
		}
	}
	if start, err := processStart([]string{boxerBin, runc}, 10*n); err == nil {
		fmt.Printf("boxer --version (its process's start and package init) / runc --version = %.1f / %.1f ms p50 = %.2f (target <= 1.5)\n",
			ms(start[0]), ms(start[1]), float64(start[0])/float64(start[1]))
	}
	py := median(cs[0].times)
	serveTimes := map[string]time.Duration{}
	for _, r := range serve {
		serveTimes[r.name] = median(r.times)
	}
	printSnapshotRatios(serveTimes)
	serveRows := map[string]row{}
	for _, r := range serve {
		serveRows[r.name] = r
	}
	for _, r := range serve {
		if plain, ok := strings.CutPrefix(r.name, "boxer serve, warm, network allowlist"); ok && serveTimes["boxer serve, warm"+plain] > 0 {
			fmt.Printf("%s / boxer serve, warm%s = %s (target <= 1.15)\n", r.name, plain, allowlistRatio(r, serveRows["boxer serve, warm"+plain]))
		}
		switch r.name {
		case e2bSDKRow:
			if api := serveTimes[e2bAPIRow]; api > 0 {
				fmt.Printf("E2B SDK cycle / boxer HTTP API cycle = %.2f (target <= 1.3)\n", float64(median(r.times))/float64(api))
			}
		case fleetRow:
			if direct := serveTimes[sessionRow.name]; direct > 0 {
				fmt.Printf("%s / direct = %.2f (the forwarding hop)\n", fleetRow, float64(median(r.times))/float64(direct))
			}
		case sessionRow.name:
			if oneShot := serveTimes["boxer serve, warm, every 0.5 s"]; oneShot > 0 {
				fmt.Printf("session call (warm interpreter) / boxer serve, warm, every 0.5 s = %.2f (target <= 0.5)\n", float64(median(r.times))/float64(oneShot))
			}
		case readySessionRow:
			fmt.Printf("%s p50 = %.1f ms (target <= 100)\n", r.name, ms(median(r.times)))
		case "boxer serve, warm, back to back":
			fmt.Printf("boxer serve, warm, runs/s at four clients / runc run's at four workers = %.2f\n", r.rate4/runc4)
			if taskModel4 > 0 {
				fmt.Printf("boxer serve, warm, runs/s at four clients / runc create, start, delete's at four workers = %.2f (target >= 0.8)\n", r.rate4/taskModel4)
			}
			if serveCPU := r.cpu / time.Duration(len(r.times)); runcCPU > 0 {
				fmt.Printf("machine CPU per run, boxer serve, warm, back to back / runc run = %.0f / %.0f ms = %.2f (target <= 1.2)\n", ms(serveCPU), ms(runcCPU), float64(serveCPU)/float64(runcCPU))
			}
		case "boxer serve, warm, every 0.5 s":
			fmt.Printf("boxer serve warm at an agent's pace / host python = %.2f (target <= 2)\n", float64(median(r.times))/float64(py))
		case "boxer serve, warm, runsc, every 0.5 s":
			if ctrRunsc > 0 {
				fmt.Printf("boxer serve warm on runsc at an agent's pace / ctr run, runsc = %.2f (target <= 0.6)\n", float64(median(r.times))/float64(ctrRunsc))
			}
		}
	}
	printPreload(preload)
	return benchMemory(boxerBin, address, rssRuns)
}

// rate4Of is the runs per second at four workers of the contender named name.
func rate4Of(cs []*contender, name string) float64 {
	for _, c := range cs {
		if c.name == name {
			return c.rate4
		}
	}
	return 0
}

// versionLine is the first line of what bin --version prints.
func versionLine(bin string) string {
	out, _ := exec.Command(bin, "--version").Output()
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}
