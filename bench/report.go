//go:build linux

package main

// The table as printed: a row per contender and per server row, then each
// ratio make bench has a target for, with the target.

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// report prints the table of cs and serve, and the ratios to their
// targets; it times boxer's and runc's start (--version) for its line.
func report(cs []*contender, serve []row, n int, boxerBin, runc, runsc string, withRunsc bool) {
	host, _ := os.Hostname()
	fmt.Printf("\nboxer bench, %s, %s: `python3 -c 'print(1)'` in a fresh hardened sandbox, %d cycles at one worker (interleaved), %d at four\n\n",
		host, time.Now().Format(time.RFC3339), n, 2*n)
	fmt.Printf("runc: %s (%s)", runc, versionLine(runc))
	if withRunsc {
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
			if direct := serveTimes[sessionCallRow]; direct > 0 {
				fmt.Printf("%s / direct = %.2f (the forwarding hop)\n", fleetRow, float64(median(r.times))/float64(direct))
			}
		case sessionCallRow:
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
	printProcRatios(serve)
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
