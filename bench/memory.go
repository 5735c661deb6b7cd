//go:build linux

package main

// boxer's memory: the CLI's peak RSS while a sandbox prints 1 GiB, and the
// server's RSS over many runs.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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
