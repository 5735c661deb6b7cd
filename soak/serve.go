//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/internal/leftover"
	"github.com/boxer-dev/boxer/runner"
)

const (
	// settleQuiet is how long the server's descriptor count must stay the
	// same before it counts as idle: its pool refills within a second of
	// the last request (20 ms of quiet, then a sandbox or two).
	settleQuiet = 2 * time.Second
	// settleMax bounds the wait for an idle server.
	settleMax = 30 * time.Second
	// sampleEvery spaces the server's RSS and descriptor samples.
	sampleEvery = 5 * time.Second
	// stopWait is how long the server may take to stop after SIGTERM:
	// boxer serve's --shutdown-grace (30 s) and then its pool's teardown.
	stopWait = time.Minute
)

// server is a boxer serve on loopback and its figures.
type server struct {
	cmd    *exec.Cmd
	url    string
	log    *os.File
	client *http.Client
	body   []byte
	exited chan struct{}
	err    error // the server's exit, once exited is closed

	mu sync.Mutex
	// rss (KiB) and fds: after the warm-up, the largest seen, and at the
	// end; each once idle, the largest from samples while runs went on.
	rssStart, rssMax, rssEnd int64
	fdsStart, fdsMax, fdsEnd int
	stopSampling             func()
	// host finds the shims; shims holds each one's RSS (KiB) at its first
	// sample and the largest seen, by PID.
	host  leftover.Host
	shims map[int]*shimRSS
}

// shimRSS is one shim's resident set: at its first sample, and the
// largest seen.
type shimRSS struct{ first, max int64 }

// startServer starts boxer serve with the pool of a normal server (boxer
// serve's own defaults, named), its log in a temporary file, and waits for
// it to answer.
func startServer(o options, address string, host leftover.Host) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	log, err := os.CreateTemp("", "boxer-soak-serve-*.log")
	if err != nil {
		return nil, err
	}
	args := []string{"--address", address, "--namespace", o.namespace, "serve", "--listen", addr, "--warm", o.lang, "--warm-size", "2"}
	if o.sharedShims >= 0 {
		args = append(args, "--shared-shims", strconv.Itoa(o.sharedShims))
	}
	if o.shimRuns > 0 {
		args = append(args, "--shim-runs", strconv.Itoa(o.shimRuns))
	}
	cmd := exec.Command(o.boxer, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		os.Remove(log.Name())
		return nil, err
	}
	body, _ := json.Marshal(map[string]string{"lang": o.lang, "code": o.code})
	s := &server{
		cmd: cmd, url: "http://" + addr, log: log, body: body, exited: make(chan struct{}),
		// One kept connection per worker, as a pool of agents would hold.
		client: &http.Client{Timeout: o.runTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: o.workers}},
		host:   host, shims: map[int]*shimRSS{},
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := s.client.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("boxer serve exited: %v: %s", s.err, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("boxer serve did not answer on %s: %s", addr, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post runs the code once through POST /v1/runs and checks that it exited
// 0 having printed 1.
func (s *server) post(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/runs", bytes.NewReader(s.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/runs: %d %s", resp.StatusCode, bytes.TrimSpace(answer))
	}
	var res runner.Result
	if err := json.Unmarshal(answer, &res); err != nil {
		return fmt.Errorf("POST /v1/runs: %v: %s", err, answer)
	}
	if res.Status != runner.StatusExited || res.ExitCode != 0 || res.Stdout != want {
		return fmt.Errorf("POST /v1/runs: status %s, exit code %d, stdout %q (want %q), stderr %q, error %q",
			res.Status, res.ExitCode, res.Stdout, want, res.Stderr, res.Error)
	}
	return nil
}

// settle waits until the server is idle (see settleQuiet), and returns its
// RSS and open descriptors then. Idle connections of the soak's own client
// are closed first: they are the client's, not the server's.
func (s *server) settle() (rss int64, fds int, err error) {
	s.client.CloseIdleConnections()
	pid := s.cmd.Process.Pid
	last, since := -1, time.Now()
	for deadline := time.Now().Add(settleMax); ; time.Sleep(100 * time.Millisecond) {
		n, err := openFDs(pid)
		if err != nil {
			return 0, 0, err
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= settleQuiet {
			break
		}
		if time.Now().After(deadline) {
			progress("boxer serve: descriptors still changing after %s; taking %d", settleMax, n)
			break
		}
	}
	rss, err = vmRSS(pid)
	return rss, last, err
}

// startSampling takes the idle figures the end is compared with, then
// samples every sampleEvery until stopSampling.
func (s *server) startSampling() error {
	rss, fds, err := s.settle()
	if err != nil {
		return err
	}
	s.rssStart, s.rssMax, s.fdsStart, s.fdsMax = rss, rss, fds, fds
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.status()
			}
		}
	}()
	s.stopSampling = func() { close(done); wg.Wait() }
	return nil
}

// status is the server's figures now, for progress lines; they count
// towards its maxima too.
func (s *server) status() string {
	pid := s.cmd.Process.Pid
	rss, err1 := vmRSS(pid)
	fds, err2 := openFDs(pid)
	if err1 != nil || err2 != nil {
		return "server gone"
	}
	s.mu.Lock()
	s.rssMax, s.fdsMax = max(s.rssMax, rss), max(s.fdsMax, fds)
	s.mu.Unlock()
	return fmt.Sprintf("server RSS %.1f MiB, %d fds; %s", mib(rss), fds, s.sampleShims())
}

// sampleShims takes the RSS of the server's shims now and says what it is.
func (s *server) sampleShims() string {
	pids, err := s.host.ShimPIDs()
	if err != nil {
		return "shims: " + err.Error()
	}
	var now []string
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range pids {
		rss, err := vmRSS(pid)
		if err != nil {
			continue // gone meanwhile
		}
		if sh := s.shims[pid]; sh != nil {
			sh.max = max(sh.max, rss)
		} else {
			s.shims[pid] = &shimRSS{first: rss, max: rss}
		}
		now = append(now, fmt.Sprintf("%.1f", mib(rss)))
	}
	return fmt.Sprintf("shims RSS [%s] MiB", strings.Join(now, " "))
}

// shimSummary says how the shims' RSS moved: how many were seen, the
// largest RSS, and the largest growth of one from its first sample.
func (s *server) shimSummary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var largest int64
	var grew *shimRSS
	for _, sh := range s.shims {
		largest = max(largest, sh.max)
		if grew == nil || sh.max-sh.first > grew.max-grew.first {
			grew = sh
		}
	}
	if grew == nil {
		return "no shim seen"
	}
	return fmt.Sprintf("%d shims seen, RSS at most %.1f MiB; the one that grew most: %.1f → %.1f MiB",
		len(s.shims), mib(largest), mib(grew.first), mib(grew.max))
}

// finish stops the sampling and takes the idle figures at the end.
func (s *server) finish() error {
	if s.stopSampling != nil {
		s.stopSampling()
	}
	rss, fds, err := s.settle()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rssEnd, s.fdsEnd = rss, fds
	s.rssMax, s.fdsMax = max(s.rssMax, rss), max(s.fdsMax, fds)
	return nil
}

// stop sends SIGTERM and waits for the server to exit; past stopWait it is
// killed and that is an error, as is any exit but 0.
func (s *server) stop() error {
	defer s.log.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopWait):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("boxer serve did not stop within %s of SIGTERM: killed; its log: %s", stopWait, s.log.Name())
	}
	if s.err != nil {
		return fmt.Errorf("boxer serve exited with %v after SIGTERM; its log: %s", s.err, s.log.Name())
	}
	return nil
}

// logTail is the end of the server's log.
func (s *server) logTail() string {
	data, _ := os.ReadFile(s.log.Name())
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}

// vmRSS is a process's resident set in KiB (proc(5), VmRSS).
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}

// openFDs is how many descriptors a process has open.
func openFDs(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(es), err
}

func mib(kib int64) float64 { return float64(kib) / 1024 }
