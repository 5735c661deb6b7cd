//go:build linux

package main

// Issue 43's rows on their own (-only exec), and their ratios with the
// targets, as the whole table prints them too.

import (
	"fmt"
	"os"
	"time"

	"github.com/boxer-dev/boxer/daemon"
)

// benchExecOnly times issue 43's rows alone: the session processes and
// their baselines (on runsc too where it is installed), then E2B's
// commands, and prints them and their ratios.
func benchExecOnly(n int, boxerBin, address string) error {
	rows, err := procRows(n, boxerBin, address)
	if err != nil {
		return err
	}
	for _, r := range rows {
		line := fmt.Sprintf("%s: p50 %.1f ms, p90 %.1f ms", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)))
		if r.rate1 > 0 {
			line += fmt.Sprintf(", %.1f runs/s at one client, %.1f at four", r.rate1, r.rate4)
		}
		fmt.Println(line)
	}
	fmt.Println()
	printProcRatios(rows)
	return nil
}

// procRows are issue 43's rows, with the bundle their baseline runs in
// made and removed here.
func procRows(n int, boxerBin, address string) ([]row, error) {
	work, err := os.MkdirTemp("", "boxer-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	defer removeCgroups(cgroupParent)
	layer, err := pythonLayer(daemon.FromEnv().Cache)
	if err != nil {
		return nil, err
	}
	if err := makeBundle(work, layer); err != nil {
		return nil, fmt.Errorf("making runc bundle: %w", err)
	}
	runc, err := daemon.RuntimeBinary("runc")
	if err != nil {
		return nil, fmt.Errorf("runc not found: run 'make deps'")
	}
	_, runscErr := daemon.RuntimeBinary("runsc")
	rows, err := benchProcs(n, boxerBin, address, work, runc, runscErr == nil)
	if err != nil {
		return nil, err
	}
	e2b, err := benchE2BCommands(n, boxerBin, address)
	if err != nil {
		return nil, err
	}
	return append(rows, e2b...), nil
}

// printProcRatios prints issue 43's ratios among rows, each with its
// target where it has one; a ratio whose rows are missing is left out.
func printProcRatios(rows []row) {
	p50 := map[string]time.Duration{}
	byName := map[string]row{}
	for _, r := range rows {
		if len(r.times) > 0 {
			p50[r.name] = median(r.times)
			byName[r.name] = r
		}
	}
	ratio := func(label, a, b, target string) {
		if p50[a] == 0 || p50[b] == 0 {
			return
		}
		if target != "" {
			target = " (target " + target + ")"
		}
		fmt.Printf("%s = %.2f (%.1f against %.1f ms p50)%s\n", label, float64(p50[a])/float64(p50[b]), ms(p50[a]), ms(p50[b]), target)
	}
	trueRunc := procRow(procTrue, "runc")
	ratio("exec `true` over HTTP (runc) / runc exec `true`", trueRunc, runcExecRow, "<= 0.25")
	ratio("exec `true` over HTTP (runc) / session call `pass`", trueRunc, passCallRow, "<= 2")
	ratio("background start over HTTP (runc) / exec `true` (runc)", procRow(procBg, "runc"), trueRunc, "<= 2")
	ratio("PTY open over HTTP (runc) / exec `true` (runc)", procRow(procPty, "runc"), trueRunc, "<= 2")
	for _, kind := range []struct{ row, label string }{
		{procTrue, "exec `true` over HTTP"},
		{procBg, "background start over HTTP"},
		{procPty, "PTY open over HTTP"},
	} {
		ratio(kind.label+", runsc / runc", procRow(kind.row, "runsc"), procRow(kind.row, "runc"), "")
	}
	ratio("E2B SDK commands.run('true') / files.exists", e2bTrueRow, e2bExistsRow, "<= 2")
	if echo, ok := byName[e2bEchoRow]; ok && echo.rate1 > 0 {
		fmt.Printf("E2B SDK commands.run(`echo $i`), runs/s at four clients / one client's = %.2f (%.1f against %.1f runs/s)\n",
			echo.rate4/echo.rate1, echo.rate4, echo.rate1)
	}
}
