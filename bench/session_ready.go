//go:build linux

package main

// The first call of a new python-data session that imports pandas, on a server with a ready session.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// readySessionRow is the row of benchReadySession.
const readySessionRow = "new python-data session + first call importing pandas (ready session)"

// benchReadySession times, n times, a new python-data session and its
// first call, which imports pandas, on a server keeping one ready
// session: the create takes it, the import finds pandas loaded. Between
// two, the pool refills (not timed).
func benchReadySession(n int, boxerBin, address string) (row, error) {
	s, err := startServer(boxerBin, address, "--warm", "", "--ready-sessions", "1", "--ready", "python-data")
	if err != nil {
		return row{}, err
	}
	defer s.stop()
	progress("new python-data sessions (ready) and their first call: %d", n)
	var times []time.Duration
	for i := 0; i < n; i++ {
		if err := s.waitReady(time.Minute); err != nil {
			return row{}, err
		}
		t := time.Now()
		id, err := s.newSession(`{"lang":"python-data"}`)
		if err != nil {
			return row{}, err
		}
		resp, err := http.Post(s.url+"/v1/sessions/"+id+"/runs", "application/json", strings.NewReader(`{"code":"import pandas as pd\nprint(pd.DataFrame({'a': [1]}).a.sum())"}`))
		if err != nil {
			return row{}, err
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"stdout":"1\n"`)) {
			return row{}, fmt.Errorf("session call: %d %s", resp.StatusCode, answer)
		}
		times = append(times, time.Since(t))
		req, _ := http.NewRequest("DELETE", s.url+"/v1/sessions/"+id, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	return row{name: readySessionRow, times: times}, nil
}

// newSession creates a session with body and returns its ID.
func (s *server) newSession(body string) (string, error) {
	resp, err := http.Post(s.url+"/v1/sessions", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var sess struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&sess); err != nil || resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST /v1/sessions: %d %v", resp.StatusCode, err)
	}
	return sess.ID, nil
}

// waitReady waits until the server has a ready session waiting.
func (s *server) waitReady(limit time.Duration) error {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(data, []byte("\nboxer_ready_sessions 1\n")) {
			return nil
		}
	}
	return fmt.Errorf("no ready session after %s", limit)
}

// printReadySession prints the row's figures and its target.
func printReadySession(r row) {
	fmt.Printf("| %s | %.1f | %.1f |\n", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)))
	fmt.Printf("%s p50 = %.1f ms (target <= 100)\n", r.name, ms(median(r.times)))
}
