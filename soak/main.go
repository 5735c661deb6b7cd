//go:build linux

// Command soak runs boxer many times over, through the CLI and through the
// server, one run at a time and several at once, and then counts what is
// left on the host: containers, tasks, active snapshots and leases in
// boxer's containerd namespace, shims, mounts, cgroups, run directories and
// runtime state, and the server's open descriptors and RSS. Any failed run
// and anything left that was not there before fails the soak.
//
// It takes about an hour with its defaults (make soak); the figures it
// prints go into the bench journal (docs/bench/, linked from BENCH.md). It
// is not part of make test.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/internal/leftover"
	"github.com/boxer-dev/boxer/runner"
	containerd "github.com/containerd/containerd/v2/client"
)

// want is what every run must print.
const want = "1\n"

const (
	// leftoverWait bounds the wait for the host to show nothing new: a
	// task's last cleanup (containerd's "shim delete" once the shim has
	// disconnected) goes on after the run has answered.
	leftoverWait = 30 * time.Second
	// showLeft is how many leftovers of a kind are named.
	showLeft = 5
)

// options are the soak's flags.
type options struct {
	runs, parallelRuns, workers, warmup int
	lang, code, boxer, namespace        string
	via                                 []string
	runTimeout                          time.Duration
	// sharedShims and shimRuns go to boxer serve when set (-1 and 0 leave
	// its defaults).
	sharedShims, shimRuns int
	// The server's limits, past which its figures fail the soak; see main.
	fdSlack               int
	rssGrowth, rssSlackMi float64
}

func main() {
	var o options
	var via string
	flag.IntVar(&o.runs, "runs", 10000, "runs one at a time, through each of -via")
	flag.IntVar(&o.parallelRuns, "parallel-runs", 1000, "runs -workers at a time, through each of -via")
	flag.IntVar(&o.workers, "workers", 8, "runs at once in the parallel phases")
	flag.IntVar(&o.warmup, "warmup", 50, "runs through the server before its RSS and descriptors are first taken")
	flag.StringVar(&o.lang, "lang", "python", "language preset of every run")
	flag.StringVar(&o.code, "code", "", "code of every run; it must print 1 (default: the preset's example, print(1) for python)")
	flag.StringVar(&o.boxer, "boxer", "boxer", "boxer binary")
	flag.StringVar(&o.namespace, "namespace", envOr("BOXER_NAMESPACE", "boxer"), "containerd namespace of the runs and of the count; nothing else may use it meanwhile, on any containerd of this host (runc's state and the cgroups are the host's, by namespace)")
	flag.StringVar(&via, "via", "cli,serve", "ways to run, comma-separated: cli (boxer run), serve (POST /v1/runs)")
	flag.IntVar(&o.sharedShims, "shared-shims", -1, "boxer serve --shared-shims (-1: its default)")
	flag.IntVar(&o.shimRuns, "shim-runs", 0, "boxer serve --shim-runs (0: its default); with -shared-shims 1 and more than the serve runs, one shim serves them all and its RSS shows what a shim grows by")
	flag.DurationVar(&o.runTimeout, "run-timeout", 2*time.Minute, "longest one run may take before it counts as failed")
	// A server that leaks one descriptor per run ends thousands above its
	// start; one that leaks none can still be a few above (a kept
	// containerd connection, a lazily opened file), hence a small slack.
	flag.IntVar(&o.fdSlack, "fd-slack", 5, "open descriptors the idle server may have at the end beyond its count after the warm-up")
	// Go's heap grows in steps (GOGC=100 lets it reach twice the live
	// heap before a collection) and the runtime returns memory lazily, so
	// RSS moves by tens of percent with no leak at all (docs/bench/2026-11-22.md: 29.7 to
	// 31.0 MiB over 10,000 runs). 50 % plus 20 MiB over the ~30 MiB server
	// still catches a leak of 3 KiB per run over 11,000 runs.
	flag.Float64Var(&o.rssGrowth, "rss-growth", 0.5, "fraction by which the server's RSS may grow from after the warm-up to the end (plus -rss-slack)")
	flag.Float64Var(&o.rssSlackMi, "rss-slack", 20, "MiB the server's RSS may grow beyond -rss-growth")
	flag.Parse()
	for _, v := range strings.Split(via, ",") {
		if v != "cli" && v != "serve" {
			fmt.Fprintf(os.Stderr, "soak: -via %q: want cli, serve or both\n", via)
			os.Exit(2)
		}
		o.via = append(o.via, v)
	}
	if o.code == "" {
		p, err := runner.LookupPreset(o.lang)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(2)
		}
		o.code = p.Example
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := soak(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// report is everything the summary prints.
type report struct {
	phases []*phase
	server *server
	// errs are failures beyond the runs': the server's figures past
	// their limits, its bad stop, a count that could not be made.
	errs []string
	// counts are the leftover counts: before the soak, then after each
	// way of running.
	counts []checkpoint
	// interrupted: the soak was stopped before its end.
	interrupted bool
}

// checkpoint is one count of leftovers.
type checkpoint struct {
	name  string
	found leftover.Found
	grown leftover.Found // against the first count
}

// soak runs every phase and the counts, prints the summary and says
// whether the soak passed. An error means it could not soak at all.
func soak(ctx context.Context, o options) (bool, error) {
	cfg := daemon.FromEnv()
	address := address(cfg)
	// The CLI would start boxer's private containerd on its first run;
	// the count before needs it first. The soak stops what it started.
	if address == cfg.Address() && !daemon.Answers(address) {
		if out, err := exec.Command(o.boxer, "containerd", "start").CombinedOutput(); err != nil {
			return false, fmt.Errorf("boxer containerd start: %v: %s", err, strings.TrimSpace(string(out)))
		}
		defer func() {
			if out, err := exec.Command(o.boxer, "containerd", "stop").CombinedOutput(); err != nil {
				progress("boxer containerd stop: %v: %s", err, strings.TrimSpace(string(out)))
			}
		}()
	}
	client, err := containerd.New(address, containerd.WithDefaultNamespace(o.namespace))
	if err != nil {
		return false, fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	defer client.Close()
	host := leftover.HostOf(cfg, address, o.namespace)
	countCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	before, err := leftover.Count(countCtx, client, host)
	cancel()
	if err != nil {
		return false, err
	}
	r := &report{counts: []checkpoint{{name: "before", found: before}}}
	// check counts again, waiting up to leftoverWait for the host to
	// show nothing new; a count that fails is a failure of the soak.
	check := func(name string) {
		var found, grown leftover.Found
		var err error
		for deadline := time.Now().Add(leftoverWait); ; time.Sleep(200 * time.Millisecond) {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			found, err = leftover.Count(cctx, client, host)
			cancel()
			if err == nil {
				grown = leftover.Growth(before, found)
				if grown.Total() == 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			r.errs = append(r.errs, fmt.Sprintf("counting leftovers %s: %v", name, err))
		}
		r.counts = append(r.counts, checkpoint{name: name, found: found, grown: grown})
	}
	progress("boxer %s on %s, namespace %s: %q in %s, %d runs one at a time and %d %d at a time, via %s",
		versionLine(o.boxer), address, o.namespace, o.code, o.lang, o.runs, o.parallelRuns, o.workers, strings.Join(o.via, " and "))
	if slices.Contains(o.via, "cli") {
		cli := func(ctx context.Context) error { return runCLI(ctx, o, address) }
		seq := &phase{name: "boxer run, 1 at a time", runs: o.runs, workers: 1}
		par := &phase{name: fmt.Sprintf("boxer run, %d at a time", o.workers), runs: o.parallelRuns, workers: o.workers}
		seq.run(ctx, cli)
		par.run(ctx, cli)
		r.phases = append(r.phases, seq, par)
		check("after boxer run")
	}
	if slices.Contains(o.via, "serve") && ctx.Err() == nil {
		if err := soakServe(ctx, o, address, host, r); err != nil {
			r.errs = append(r.errs, err.Error())
		}
		check("after boxer serve")
	}
	r.interrupted = ctx.Err() != nil
	ok := r.print(o, address)
	if r.server != nil {
		if ok {
			os.Remove(r.server.log.Name())
		} else {
			progress("boxer serve's log: %s", r.server.log.Name())
		}
	}
	return ok, nil
}

// soakServe starts a server, warms it up, runs its two phases while its
// figures are sampled, and stops it.
func soakServe(ctx context.Context, o options, address string, host leftover.Host, r *report) error {
	s, err := startServer(o, address, host)
	if err != nil {
		return err
	}
	r.server = s
	warm := &phase{name: "boxer serve, warm-up", runs: o.warmup, workers: 1}
	seq := &phase{name: "boxer serve, 1 client", runs: o.runs, workers: 1, status: s.status}
	par := &phase{name: fmt.Sprintf("boxer serve, %d clients", o.workers), runs: o.parallelRuns, workers: o.workers, status: s.status}
	warm.run(ctx, s.post)
	r.phases = append(r.phases, warm)
	// An interrupted soak leaves the server's figures out: a ^C reaches
	// the server too, which then stops on its own.
	if ctx.Err() == nil {
		err = s.startSampling()
	}
	if err == nil && ctx.Err() == nil {
		progress("boxer serve (pid %d) idle after the warm-up: %s", s.cmd.Process.Pid, s.status())
		seq.run(ctx, s.post)
		par.run(ctx, s.post)
		r.phases = append(r.phases, seq, par)
		if ctx.Err() == nil {
			if err = s.finish(); err == nil {
				progress("boxer serve idle at the end: %s", s.status())
				r.errs = append(r.errs, s.check(o)...)
			}
		}
	}
	if serr := s.stop(); serr != nil && ctx.Err() == nil {
		r.errs = append(r.errs, serr.Error())
	}
	if err != nil {
		return fmt.Errorf("boxer serve's figures: %w", err)
	}
	return nil
}

// check compares the idle server's figures at the end with those after its
// warm-up.
func (s *server) check(o options) []string {
	var errs []string
	if s.fdsEnd > s.fdsStart+o.fdSlack {
		errs = append(errs, fmt.Sprintf("boxer serve has %d descriptors open at the end, %d after the warm-up (limit %d)",
			s.fdsEnd, s.fdsStart, s.fdsStart+o.fdSlack))
	}
	if limit := s.rssLimit(o); float64(s.rssEnd) > limit {
		errs = append(errs, fmt.Sprintf("boxer serve's RSS is %.1f MiB at the end, %.1f MiB after the warm-up (limit %.1f MiB)",
			mib(s.rssEnd), mib(s.rssStart), mib(int64(limit))))
	}
	return errs
}

// rssLimit is the largest RSS (KiB) the server may end with.
func (s *server) rssLimit(o options) float64 {
	return float64(s.rssStart)*(1+o.rssGrowth) + o.rssSlackMi*1024
}

// runCLI runs the code once with boxer run and checks that it exited 0
// having printed 1. A run past -run-timeout, or one the soak's end cuts
// short, gets SIGTERM, on which boxer removes its sandbox.
func runCLI(ctx context.Context, o options, address string) error {
	ctx, cancel := context.WithTimeout(ctx, o.runTimeout)
	defer cancel()
	// --no-standby: a standby is left on purpose, for minutes, and would
	// count as a leftover at the end.
	cmd := exec.CommandContext(ctx, o.boxer, "--address", address, "--namespace", o.namespace, "run", "--no-standby", "--lang", o.lang, "-c", o.code)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil || out.String() != want {
		return fmt.Errorf("boxer run: %v, stdout %q (want %q), stderr %q", exitOf(err), out.String(), want, lastLine(errb.String()))
	}
	return nil
}

func exitOf(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// address is the containerd boxer uses: $BOXER_ADDRESS, the system one if
// it answers, else boxer's private one (as bench finds it).
func address(cfg daemon.Config) string {
	if a := os.Getenv("BOXER_ADDRESS"); a != "" {
		return a
	}
	if cfg.SystemAddress != "" && daemon.Answers(cfg.SystemAddress) {
		return cfg.SystemAddress
	}
	return cfg.Address()
}

// print writes the summary, as Markdown to paste into the bench journal, and says
// whether the soak passed.
func (r *report) print(o options, address string) bool {
	host, _ := os.Hostname()
	ok := true
	fmt.Printf("\nboxer soak, %s, %s: boxer %s on %s, namespace %s, `%s` in %s\n\n",
		host, time.Now().UTC().Format(time.RFC3339), versionLine(o.boxer), address, o.namespace, o.code, o.lang)
	fmt.Println("| phase | runs | failed | runs/s | p50 ms | p90 ms | p99 ms |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, p := range r.phases {
		name := p.name
		if p.interrupted {
			name += " (interrupted)"
		}
		fmt.Printf("| %s | %d | %d | %.1f | %.1f | %.1f | %.1f |\n", name, len(p.times), p.failed,
			rate(len(p.times), p.wall), ms(pct(p.times, 0.5)), ms(pct(p.times, 0.9)), ms(pct(p.times, 0.99)))
		if p.failed > 0 {
			ok = false
		}
	}
	fmt.Println()
	if s := r.server; s != nil && s.rssEnd > 0 {
		fmt.Printf("boxer serve, idle after %d warm-up runs → idle at the end: RSS %.1f → %.1f MiB (limit %.1f; largest seen, every %s and at each progress line: %.1f); open descriptors %d → %d (limit %d; largest seen: %d)\n\n",
			o.warmup, mib(s.rssStart), mib(s.rssEnd), mib(int64(s.rssLimit(o))), sampleEvery, mib(s.rssMax),
			s.fdsStart, s.fdsEnd, s.fdsStart+o.fdSlack, s.fdsMax)
		fmt.Printf("boxer serve's shims (sampled every %s and at each progress line): %s\n\n", sampleEvery, s.shimSummary())
	}
	header, rule := "| left behind |", "|---|"
	for i, c := range r.counts {
		if i == 0 {
			header += " " + c.name + " |"
		} else {
			header += " new " + c.name + " |"
		}
		rule += "---|"
	}
	fmt.Println(header)
	fmt.Println(rule)
	for _, k := range leftover.Kinds {
		line := "| " + string(k) + " |"
		for i, c := range r.counts {
			n := len(c.found[k])
			if i > 0 {
				n = len(c.grown[k])
			}
			line += fmt.Sprintf(" %d |", n)
		}
		fmt.Println(line)
	}
	fmt.Println()
	for _, c := range r.counts[1:] {
		for _, k := range leftover.Kinds {
			names := c.grown[k]
			if len(names) == 0 {
				continue
			}
			ok = false
			fmt.Printf("%s %s: %d left behind: %s", c.name, k, len(names), strings.Join(names[:min(len(names), showLeft)], "; "))
			if len(names) > showLeft {
				fmt.Printf("; and %d more", len(names)-showLeft)
			}
			fmt.Println()
		}
	}
	for _, p := range r.phases {
		for _, e := range p.errs {
			fmt.Printf("%s, failed %s\n", p.name, e)
		}
	}
	for _, e := range r.errs {
		ok = false
		fmt.Println(e)
	}
	switch {
	case r.interrupted:
		ok = false
		fmt.Println("soak interrupted: the figures are of the runs made until then")
	case ok:
		fmt.Println("soak passed: every run printed 1, nothing left behind")
	default:
		fmt.Println("soak FAILED")
	}
	return ok
}

// versionLine is the first line of what bin --version prints.
func versionLine(bin string) string {
	out, _ := exec.Command(bin, "--version").Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimPrefix(line, "boxer version ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
