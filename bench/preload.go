//go:build linux

package main

// The preloaded interpreter rows (issue 29): a python-data program that
// imports pandas and matplotlib, on a warm server and with a CLI standby,
// preloaded and not, and the same program without the imports.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// preloadImports is the data agent's first step; preloadPlain the same
// program without the imports.
const (
	preloadImports = "import pandas, matplotlib.pyplot\nprint(1)"
	preloadPlain   = "print(1)"
	preloadRow     = "boxer run --lang python-data importing pandas and matplotlib"
)

// preloadResult is what the preload rows found.
type preloadResult struct {
	rows []row
	// cold counts, by row, the requests that found no warm sandbox.
	cold map[string]int
}

// benchPreload times the preload rows, n runs each.
func benchPreload(n int, boxerBin, address string) (preloadResult, error) {
	res := preloadResult{cold: map[string]int{}}
	for _, preload := range []bool{true, false} {
		suffix := ""
		if !preload {
			suffix = ", preload off"
		}
		s, err := startServer(boxerBin, address, "--warm", "python-data", "--warm-size", "1", "--concurrency", "1")
		if err != nil {
			return res, err
		}
		for _, p := range []struct{ name, code string }{
			{preloadRow + ", warm server" + suffix, preloadImports},
			{"python-data print(1), warm server" + suffix, preloadPlain},
		} {
			progress("%s: %d requests", p.name, n)
			var times []time.Duration
			for i := 0; i <= n; i++ {
				// The pool refills (a preloaded sandbox imports for a
				// second or more) before each request: an agent's pace.
				time.Sleep(3 * time.Second)
				waitQuiet()
				before := warmRunsOf(s.url)
				t := time.Now()
				if err := postData(s.url, p.code, preload); err != nil {
					s.stop()
					return res, fmt.Errorf("%s: %w", p.name, err)
				}
				if i == 0 {
					continue // warm-up
				}
				times = append(times, time.Since(t))
				if warmRunsOf(s.url) == before {
					res.cold[p.name]++
				}
			}
			res.rows = append(res.rows, row{name: p.name, times: times})
		}
		s.stop()
		for _, p := range []struct{ name, code string }{
			{preloadRow + ", CLI standby" + suffix, preloadImports},
			{"python-data print(1), CLI standby" + suffix, preloadPlain},
		} {
			progress("%s: %d runs", p.name, n)
			var times []time.Duration
			for i := 0; i <= n; i++ {
				if err := standbyReady(address, 1); err != nil {
					return res, err
				}
				waitQuiet()
				args := []string{"--address", address, "run", "--lang", "python-data", "-c", p.code}
				if !preload {
					args = append(args, "--no-preload")
				}
				cmd := exec.Command(boxerBin, args...)
				cmd.Env = append(os.Environ(), "BOXER_STANDBY=1", "BOXER_STANDBY_IDLE=2m")
				t := time.Now()
				if err := command(func(int) *exec.Cmd { return cmd })(i); err != nil {
					return res, fmt.Errorf("%s: %w", p.name, err)
				}
				if i > 0 {
					times = append(times, time.Since(t))
				}
			}
			res.rows = append(res.rows, row{name: p.name, times: times})
			endStandbys(boxerBin)
		}
	}
	return res, nil
}

// postData runs code with python-data through a server.
func postData(url, code string, preload bool) error {
	body, _ := json.Marshal(map[string]any{"lang": "python-data", "code": code, "preload": preload})
	return postRun(url, string(body))
}

// warmRunsOf reads boxer_warm_runs_total from a server's metrics.
func warmRunsOf(url string) int {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var n int
	for _, l := range strings.Split(string(data), "\n") {
		if _, err := fmt.Sscanf(l, "boxer_warm_runs_total %d", &n); err == nil {
			return n
		}
	}
	return -1
}

// printPreload prints the preload rows and their targets.
func printPreload(res preloadResult) {
	fmt.Println("\n| preloaded interpreters | p50 ms | p90 ms | runs that found no warm sandbox |")
	fmt.Println("|---|---|---|---|")
	p50 := map[string]time.Duration{}
	for _, r := range res.rows {
		p50[r.name] = median(r.times)
		cold := "—"
		if strings.Contains(r.name, "warm server") {
			cold = fmt.Sprint(res.cold[r.name])
		}
		fmt.Printf("| %s | %.1f | %.1f | %s |\n", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)), cold)
	}
	fmt.Println()
	for _, where := range []string{"warm server", "CLI standby"} {
		with, without := p50[preloadRow+", "+where], p50["python-data print(1), "+where]
		fmt.Printf("%s, %s, p50 = %.1f ms (target <= 100; preload off: %.1f ms)\n", preloadRow, where, ms(with), ms(p50[preloadRow+", "+where+", preload off"]))
		if without > 0 {
			fmt.Printf("%s, %s / the same program without the imports = %.2f (target <= 1.5)\n", preloadRow, where, float64(with)/float64(without))
		}
	}
}
