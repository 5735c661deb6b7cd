//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

const (
	// progressEvery is how many runs apart a phase says where it is: one
	// to three minutes of a sequential phase on the development VM, so
	// that an hour's soak can be watched.
	progressEvery = 500
	// keepErrors is how many failures of a phase are kept to show.
	keepErrors = 5
)

// phase is one stretch of runs, made by a number of workers at once, and
// what came of them.
type phase struct {
	name    string
	runs    int // asked for
	workers int
	// status, if set, adds to each progress line (the server's figures).
	status func() string

	mu     sync.Mutex
	times  []time.Duration // of every finished run, failed ones too
	failed int
	errs   []string // the first keepErrors failures
	wall   time.Duration
	// interrupted: the soak was stopped before the phase ended.
	interrupted bool
}

// run makes p.runs calls of once from p.workers goroutines. A failure is
// counted and kept, never fatal: a soak goes on to its end and reports
// them all. When ctx ends, no new run starts and the phase ends once the
// runs under way have.
func (p *phase) run(ctx context.Context, once func(ctx context.Context) error) {
	progress("%s: %d runs, %d at a time", p.name, p.runs, p.workers)
	start := time.Now()
	var next sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				next.Lock()
				i := n
				n++
				next.Unlock()
				if i >= p.runs {
					return
				}
				t := time.Now()
				err := once(ctx)
				p.record(ctx, time.Since(t), err, start)
			}
		}()
	}
	wg.Wait()
	p.wall = time.Since(start)
	if ctx.Err() != nil {
		p.interrupted = true
	}
	progress("%s", p.line())
}

// record notes one finished run; a run cut short by the soak's own end is
// not the sandbox's failure and is not counted.
func (p *phase) record(ctx context.Context, d time.Duration, err error, start time.Time) {
	if err != nil && ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	p.times = append(p.times, d)
	if err != nil {
		p.failed++
		if len(p.errs) < keepErrors {
			p.errs = append(p.errs, fmt.Sprintf("run %d: %v", len(p.times), err))
		}
	}
	done := len(p.times)
	p.mu.Unlock()
	if done%progressEvery == 0 && done < p.runs {
		progress("%s", p.lineAt(time.Since(start)))
	}
}

// line is where the phase is: runs done, failures, rate and latencies so
// far, and the server's figures where it has them.
func (p *phase) line() string { return p.lineAt(p.wall) }

func (p *phase) lineAt(elapsed time.Duration) string {
	p.mu.Lock()
	times := slices.Clone(p.times)
	failed := p.failed
	p.mu.Unlock()
	s := fmt.Sprintf("%s: %d/%d runs, %d failed, %.1f runs/s, p50 %.0f ms, p99 %.0f ms, %s",
		p.name, len(times), p.runs, failed, rate(len(times), elapsed), ms(pct(times, 0.5)), ms(pct(times, 0.99)), elapsed.Round(time.Second))
	if p.status != nil {
		s += "; " + p.status()
	}
	return s
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// pct is the p-th quantile of d, nearest rank; 0 for none.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1)+0.5)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...)
}
