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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func main() {
	n := flag.Int("n", 20, "cycles per contender at one worker (four workers run 2n)")
	rssRuns := flag.Int("rss-runs", 1000, "runs through boxer serve while its RSS is sampled")
	boxerBin := flag.String("boxer", "boxer", "boxer binary")
	table := flag.Bool("table", true, "time the contenders (false: memory figures only)")
	only := flag.String("only", "", "run some rows only: ready-session, preload, fleet, snapshot or serve (warm, with and without an allowlist)")
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
	case *only != "":
		err = fmt.Errorf("-only %q: the rows to run alone are ready-session, preload, fleet, snapshot and serve", *only)
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

// workers runs total calls of once from w goroutines and returns the
// latencies, the rate, and how many failed with the first error.
func workers(w, total int, once func(i int) error) ([]time.Duration, float64, int, error) {
	var mu sync.Mutex
	var times []time.Duration
	var firstErr error
	failed := 0
	next := 0
	start := time.Now()
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= total {
					return
				}
				t := time.Now()
				err := once(i)
				d := time.Since(t)
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				}
				times = append(times, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return times, float64(total) / time.Since(start).Seconds(), failed, firstErr
}

// row is one line of boxer serve figures.
type row struct {
	name         string
	times        []time.Duration
	rate1, rate4 float64
	// cpu is the whole machine's busy CPU time over times' runs (where
	// measured), what the server did for them after they answered included.
	cpu time.Duration
}

// server is a running 'boxer serve' on loopback; its requests ask for
// runtime.
type server struct {
	cmd     *exec.Cmd
	url     string
	runtime string
	// net: its requests ask for egress (allow_hosts).
	net bool
}

// benchHost is the allowlist of the network rows: the runs make no
// connection, so they measure what a link out costs.
const benchHost = "pypi.org"

func startServer(boxerBin, address string, args ...string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	return startServerOn(boxerBin, address, addr, args...)
}

// startServerOn is startServer listening on addr.
func startServerOn(boxerBin, address, addr string, args ...string) (*server, error) {
	cmd := exec.Command(boxerBin, append([]string{"--address", address, "serve", "--listen", addr, "--queue", "64"}, args...)...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: "http://" + addr}
	for deadline := time.Now().Add(15 * time.Second); ; {
		if resp, err := http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("boxer serve did not answer on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

func (s *server) post(int) error {
	body := `{"lang":"python","code":"print(1)"`
	if s.runtime != "" {
		body += `,"runtime":"` + s.runtime + `"`
	}
	if s.net {
		body += `,"allow_hosts":["` + benchHost + `"]`
	}
	body += "}"
	return postRun(s.url, body)
}

// postRun sends body to url's POST /v1/runs and wants the run to print 1.
func postRun(url, body string) error {
	resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(answer, []byte(`"stdout":"1\n"`)) {
		return fmt.Errorf("POST /v1/runs: %d %s", resp.StatusCode, answer)
	}
	return nil
}

// benchServe measures POST /v1/runs on servers with pre-created sandboxes
// (warm: "python", "python:net" or "python:runsc") or without (warm: "",
// runtime runc). Servers given together run side by side, and their
// back-to-back rows are measured in turns (blocks of n requests, each on a
// quiet machine), so that they compare on the same machine: this VM's
// speed drifts by 10 % from one minute to the next, for every process.
func benchServe(n int, boxerBin, address string, warms ...string) ([]row, error) {
	servers := make([]*server, len(warms))
	kinds := make([]string, len(warms))
	for i, warm := range warms {
		s, kind, err := startServe(boxerBin, address, warm)
		if err != nil {
			return nil, err
		}
		defer s.stop()
		servers[i], kinds[i] = s, kind
	}
	agent := make([]row, len(warms))
	for i, s := range servers {
		if warms[i] == "" {
			continue
		}
		// An agent between tool calls: one request every half second,
		// after the pool has refilled.
		progress("boxer serve, %s: %d requests, one every 0.5 s", kinds[i], n)
		var times []time.Duration
		for j := 0; j < n; j++ {
			time.Sleep(500 * time.Millisecond)
			t := time.Now()
			if err := s.post(j); err != nil {
				return nil, err
			}
			times = append(times, time.Since(t))
		}
		agent[i] = row{name: "boxer serve, " + kinds[i] + ", every 0.5 s", times: times}
	}
	b2b := make([]row, len(warms))
	spent := make([]time.Duration, len(warms))
	progress("boxer serve, %s: %d requests back to back, in blocks of %d", strings.Join(kinds, " and "), b2bRuns(n), n)
	for range b2bRuns(n) / n {
		for i, s := range servers {
			// The CPU column counts the whole machine: what ran before
			// (an earlier row, the other server's refill) ends first;
			// this server's refill after its last answer counts.
			waitQuiet()
			busy := busyCPU()
			t := time.Now()
			times, _, _, err := workers(1, n, s.post)
			if err != nil {
				return nil, err
			}
			spent[i] += time.Since(t)
			waitQuiet()
			b2b[i].cpu += busyCPU() - busy
			b2b[i].times = append(b2b[i].times, times...)
		}
	}
	var rows []row
	for i, s := range servers {
		progress("boxer serve, %s: %d requests from four clients", kinds[i], 2*n)
		waitQuiet()
		_, rate4, _, err := workers(4, 2*n, s.post)
		if err != nil {
			return nil, err
		}
		r := b2b[i]
		r.name, r.rate4 = "boxer serve, "+kinds[i]+", back to back", rate4
		r.rate1 = float64(len(r.times)) / spent[i].Seconds()
		if warms[i] != "" {
			rows = append(rows, agent[i])
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// startServe starts a server for benchServe and sends it a first request;
// kind names its rows.
func startServe(boxerBin, address, warm string) (*server, string, error) {
	args := []string{"--warm", warm}
	kind, runtime, net := "warm", "", false
	if warm == "" {
		kind = "cold"
	}
	for _, p := range strings.Split(warm, ":")[1:] {
		if p == "net" {
			net, kind = true, kind+", network allowlist"
			args = append(args, "--allow-host", benchHost)
		} else {
			runtime, kind = p, kind+", "+p
		}
	}
	s, err := startServer(boxerBin, address, args...)
	if err != nil {
		return nil, "", err
	}
	s.runtime, s.net = runtime, net
	if err := s.post(0); err != nil {
		s.stop()
		return nil, "", err
	}
	return s, kind, nil
}

// b2bRuns is how many requests a warm server's back-to-back row sends:
// more than other rows, whose times are not split in two (see
// allowlistRatio).
func b2bRuns(n int) int { return 5 * n }

// benchServeOnly runs the warm server's rows with and without an
// allowlist, and prints their ratios and CPU per run.
func benchServeOnly(n int, boxerBin, address string) error {
	rows, err := benchServe(n, boxerBin, address, "python", "python:net")
	if err != nil {
		return err
	}
	for _, r := range rows {
		fmt.Printf("%s: p50 %.1f ms, p90 %.1f ms", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)))
		if r.cpu > 0 {
			fmt.Printf(", machine CPU %.0f ms per run, %.1f runs/s at four clients", ms(r.cpu)/float64(len(r.times)), r.rate4)
		}
		fmt.Println()
	}
	for i := 0; i+2 < len(rows); i++ {
		fmt.Printf("%s / without = %s\n", rows[i+2].name, allowlistRatio(rows[i+2], rows[i]))
	}
	return nil
}

// allowlistRatio is what a link out costs a warm server's row, net's over
// plain's. Back to back, it is the time per request at one client (plain's
// runs/s over net's), with the p50s' ratio beside it: there, about half
// the requests find a sandbox ready and half wait for one being made, so
// the p50 sits on the edge between the two and flips from one run to the
// next (0.84 to 1.25 for one build). Else it is the p50s' ratio.
func allowlistRatio(net, plain row) string {
	p50 := float64(median(net.times)) / float64(median(plain.times))
	if net.rate1 > 0 && plain.rate1 > 0 {
		return fmt.Sprintf("%.2f per request at one client (p50 %.2f)", plain.rate1/net.rate1, p50)
	}
	return fmt.Sprintf("%.2f", p50)
}

// benchMemory prints boxer's peak RSS while a sandbox prints 1 GiB, and the
// server's RSS sampled over rssRuns requests from four clients.
func benchMemory(boxerBin, address string, rssRuns int) error {
	gib := "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.buffer.write(chunk)\n"
	peak := func(code string) (int64, error) {
		cmd := exec.Command(boxerBin, "--address", address, "run", "--lang", "python", "--timeout", "120s", "-c", code)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			return 0, err
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, nil
	}
	big, err := peak(gib)
	if err != nil {
		return fmt.Errorf("printing 1 GiB: %w", err)
	}
	small, err := peak("print(1)")
	if err != nil {
		return err
	}
	fmt.Printf("\nboxer run peak RSS: %.1f MiB while the sandbox prints 1 GiB (target <= 40), %.1f MiB for one line\n", float64(big)/1024, float64(small)/1024)
	if rssRuns <= 0 {
		return nil
	}
	s, err := startServer(boxerBin, address, "--warm", "python")
	if err != nil {
		return err
	}
	defer s.stop()
	const warmup = 100
	if _, _, _, err := workers(4, warmup, s.post); err != nil {
		return err
	}
	progress("boxer serve RSS over %d runs from four clients", rssRuns)
	samples := []int64{vmRSS(s.cmd.Process.Pid)}
	step := max(rssRuns/10, 1)
	start := time.Now()
	for done := 0; done < rssRuns; done += step {
		if _, _, _, err := workers(4, min(step, rssRuns-done), s.post); err != nil {
			return err
		}
		samples = append(samples, vmRSS(s.cmd.Process.Pid))
	}
	var parts []string
	for _, kb := range samples {
		parts = append(parts, fmt.Sprintf("%.1f", float64(kb)/1024))
	}
	fmt.Printf("boxer serve RSS (MiB) after %d warm-up runs, then every %d runs up to %d (%.0f s): %s\n",
		warmup, step, rssRuns, time.Since(start).Seconds(), strings.Join(parts, " "))
	return nil
}

// vmRSS is a process's resident set in KiB.
func vmRSS(pid int) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb
		}
	}
	return 0
}

// cgroupParent holds the bench's own cgroups.
var cgroupParent = fmt.Sprintf("/boxer-bench-%d", os.Getpid())

// hardening is what podman and docker are asked for: boxer's defaults.
var hardening = []string{"--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp:size=64m",
	"--memory", "256m", "--cpus", "1", "--pids-limit", "64", "--cap-drop", "ALL",
	"--security-opt", "no-new-privileges", "--user", "65534:65534"}

// podman returns podman's contender, with its own storage under work and
// runc as its runtime, or nil where podman is not installed.
func podman(work, layer, runc string) (*contender, func(), error) {
	bin, err := exec.LookPath("podman")
	if err != nil {
		return nil, nil, nil
	}
	root := filepath.Join(work, "podman")
	// cgroupfs: no systemd here; runc: crun refuses hybrid cgroups; the
	// rlimits podman raises by default are above this host's hard limits.
	base := []string{"--root", filepath.Join(root, "root"), "--runroot", filepath.Join(root, "run"),
		"--cgroup-manager", "cgroupfs", "--events-backend", "file", "--runtime", runc, "--storage-driver", "overlay"}
	stop := func() {
		_ = exec.Command(bin, append(base, "rmi", "--all", "--force")...).Run()
		unmountUnder(root)
	}
	if out, err := exec.Command(bin, append(base, "import", layer, "boxer-bench/python")...).CombinedOutput(); err != nil {
		stop()
		return nil, nil, fmt.Errorf("importing the image: %v: %s", err, lastLine(string(out)))
	}
	args := append(append(append([]string{}, base...), "run"), hardening...)
	args = append(args, "--cgroup-parent", cgroupParent+"/podman", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"boxer-bench/python", "python3", "-c", "print(1)")
	return &contender{name: "podman run", once: command(func(int) *exec.Cmd { return exec.Command(bin, args...) })}, stop, nil
}

// docker returns docker's contender: a private dockerd on boxer's private
// containerd, its data under work, runc its default runtime, stopped by the
// returned func; nil where docker is not installed.
func docker(work, layer, address, runc string) (*contender, func(), error) {
	dockerd, err := exec.LookPath("dockerd")
	if err != nil {
		return nil, nil, nil
	}
	cli := "/usr/bin/docker" // Debian's client, matching its dockerd
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("docker"); err != nil {
			return nil, nil, nil
		}
	}
	root := filepath.Join(work, "docker")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(root, "docker.sock")
	d := exec.Command(dockerd, "--containerd", address, "--containerd-namespace", "bench-moby",
		"--containerd-plugins-namespace", "bench-moby-plugins",
		"--data-root", filepath.Join(root, "data"), "--exec-root", filepath.Join(root, "exec"),
		"--pidfile", filepath.Join(root, "dockerd.pid"), "-H", "unix://"+sock,
		// No bridge, no firewall rules and no forwarding: by default
		// dockerd turns net.ipv4.ip_forward on and leaves it on.
		"--bridge", "none", "--iptables=false", "--ip6tables=false", "--ip-forward=false",
		"--ip-masq=false", "--userland-proxy=false",
		"--add-runtime", "bench-runc="+runc, "--default-runtime", "bench-runc")
	logf, err := os.Create(filepath.Join(root, "dockerd.log"))
	if err != nil {
		return nil, nil, err
	}
	d.Stdout, d.Stderr = logf, logf
	if err := d.Start(); err != nil {
		return nil, nil, err
	}
	base := []string{"-H", "unix://" + sock}
	stop := func() {
		_ = exec.Command(cli, append(base, "rmi", "--force", "boxer-bench/python")...).Run()
		_ = d.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = d.Process.Kill()
			<-done
		}
		logf.Close()
		unmountUnder(root)
		// dockerd's containerd namespaces, empty once it has stopped.
		for _, ns := range []string{"bench-moby", "bench-moby-plugins"} {
			_ = exec.Command(filepath.Join(daemon.LibexecDir, "ctr"), "-a", address, "namespaces", "rm", ns).Run()
		}
	}
	for deadline := time.Now().Add(30 * time.Second); exec.Command(cli, append(base, "version")...).Run() != nil; {
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("dockerd did not answer; see its log")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := exec.Command(cli, append(base, "import", layer, "boxer-bench/python")...).CombinedOutput(); err != nil {
		stop()
		return nil, nil, fmt.Errorf("importing the image: %v: %s", err, lastLine(string(out)))
	}
	args := append(append(append([]string{}, base...), "run"), hardening...)
	args = append(args, "--cgroup-parent", cgroupParent+"/docker", "boxer-bench/python", "python3", "-c", "print(1)")
	return &contender{name: "docker run", once: command(func(int) *exec.Cmd { return exec.Command(cli, args...) })}, stop, nil
}

// removeCgroups removes a cgroup and the ones under it (podman makes one
// for conmon) in every hierarchy, deepest first; only empty ones can go.
func removeCgroups(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(cgroups.Root, "*", parent))
	if d := filepath.Join(cgroups.Root, parent); cgroups.DetectMode() == cgroups.Unified {
		dirs = []string{d}
	}
	var all []string
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(all)))
	for _, d := range all {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			progress("removing cgroup %s: %v", d, err)
		}
	}
}

// unmountUnder lazily unmounts whatever a container engine left mounted
// under dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
}

// versionLine is the first line of what bin --version prints.
func versionLine(bin string) string {
	out, _ := exec.Command(bin, "--version").Output()
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// runscWrapper runs one boxer sandbox on runsc so that boxer writes its
// runsc wrapper, and returns the wrapper's path for ctr's --runc-binary: both
// rows then run runsc with the same flags.
func runscWrapper(boxerBin, address string) (string, error) {
	out, err := exec.Command(boxerBin, "--address", address, "run", "--runtime", "runsc", "--lang", "bash", "-c", "true").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("boxer run --runtime runsc: %v: %s", err, lastLine(string(out)))
	}
	p := filepath.Join(daemon.FromEnv().State, "runsc")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("runsc wrapper: %w", err)
	}
	return p, nil
}

// pythonLayer is the cached layer of boxer's python image.
func pythonLayer(cache string) (string, error) {
	layers, _ := filepath.Glob(filepath.Join(cache, "*", "layer.tar"))
	if len(layers) == 0 {
		return "", errors.New("no cached layer under " + cache + ": run 'boxer setup' first")
	}
	// The smallest cached layer with python3 is the python preset's.
	sort.Slice(layers, func(i, j int) bool { return size(layers[i]) < size(layers[j]) })
	for _, l := range layers {
		if out, err := exec.Command("tar", "-tf", l, "usr/bin/python3").CombinedOutput(); err == nil && len(out) > 0 {
			return l, nil
		}
	}
	return "", errors.New("no cached layer with python3 under " + cache + ": run 'boxer setup --lang python'")
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// makeBundle unpacks the python layer and writes boxer's own hardened spec
// for `python3 -c 'print(1)'` next to it.
func makeBundle(dir, layer string) error {
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return err
	}
	// tar(1) keeps owners, modes and links exactly.
	if out, err := exec.Command("tar", "-C", rootfs, "-xf", layer).CombinedOutput(); err != nil {
		return fmt.Errorf("unpacking layer: %v: %s", err, out)
	}
	spec, err := oci.New(context.Background(), "bench",
		oci.WithHardenedBase,
		oci.WithProcess([]string{"python3", "-c", "print(1)"}, []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"}, oci.Workspace),
		oci.WithLimits(oci.Limits{MemoryBytes: runner.DefaultMemory, CPUs: 1, Pids: runner.DefaultPids, TmpBytes: runner.DefaultTmpSize, NoFile: 1024}),
		oci.WithSeccomp(seccomp.DefaultProfile()),
		oci.WithCgroupsPath(cgroupParent+"/runc"),
	)
	if err != nil {
		return err
	}
	spec.Root.Path = rootfs
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

// runBundle is the bundle of runc run i: the bench's bundle's spec with a
// cgroup of the run's own, as containerd gives each container (runs at
// once must not share one).
func runBundle(work string, i int) (string, error) {
	data, err := os.ReadFile(filepath.Join(work, "config.json"))
	if err != nil {
		return "", err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return "", err
	}
	spec.Linux.CgroupsPath = fmt.Sprintf("%s/runc-%d", cgroupParent, i+2)
	if data, err = json.Marshal(spec); err != nil {
		return "", err
	}
	dir := filepath.Join(work, "runs", strconv.Itoa(i+2))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1)+0.5)]
}

func sum(d []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range d {
		t += x
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// hostPython is the distribution's python3: a version manager's shim on the
// PATH would time itself, not python.
func hostPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// busyCPU is the whole machine's busy CPU time since boot: /proc/stat's
// user, nice, system, irq, softirq and steal, in clock ticks of 10 ms
// (proc(5)). Differences over a stretch of otherwise idle machine are what
// the stretch cost.
func busyCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// waitQuiet waits, up to quietMax, until the machine has been busy for at
// most one clock tick (10 ms of CPU) over quietWindow.
func waitQuiet() {
	deadline := time.Now().Add(quietMax)
	last := busyCPU()
	for time.Now().Before(deadline) {
		time.Sleep(quietWindow)
		now := busyCPU()
		if now-last <= 10*time.Millisecond {
			return
		}
		last = now
	}
}

const (
	quietWindow = 100 * time.Millisecond
	quietMax    = 3 * time.Second
)

// processStart is the p50 of n runs of each bin --version, interleaved:
// a process's start, its package init and its exit.
func processStart(bins []string, n int) ([]time.Duration, error) {
	times := make([][]time.Duration, len(bins))
	for range n {
		for i, bin := range bins {
			t := time.Now()
			if err := exec.Command(bin, "--version").Run(); err != nil {
				return nil, err
			}
			times[i] = append(times[i], time.Since(t))
		}
	}
	p50s := make([]time.Duration, len(bins))
	for i := range bins {
		p50s[i] = median(times[i])
	}
	return p50s, nil
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
