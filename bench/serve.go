//go:build linux

package main

// boxer serve's rows: POST /v1/runs on a warm or cold server, at an
// agent's pace, back to back and from four clients.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

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
