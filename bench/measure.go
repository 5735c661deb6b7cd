//go:build linux

package main

// How every row is timed: workers, percentiles, the machine's busy CPU,
// a quiet machine before each run, a process's start.

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

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
