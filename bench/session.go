//go:build linux

package main

// A call into a live python session's warm interpreter, over HTTP.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// sessionCallRow is the name of benchSession's row.
const sessionCallRow = "session call (warm interpreter), every 0.5 s"

// benchSession measures calls in a python session over HTTP: the state
// is warm (one interpreter), so a call is an exec and a hand-over.
func benchSession(n int, boxerBin, address string) (row, error) {
	s, err := startServer(boxerBin, address, "--warm-size", "0")
	if err != nil {
		return row{}, err
	}
	defer s.stop()
	times, err := sessionCalls(n, s.url, s.url)
	if err != nil {
		return row{}, err
	}
	return row{name: sessionCallRow, times: times}, nil
}

// sessionCalls makes a python session through the server at made and
// times n calls of it through the one at called, one every 0.5 s.
func sessionCalls(n int, made, called string) ([]time.Duration, error) {
	resp, err := http.Post(made+"/v1/sessions", "application/json", strings.NewReader(`{"lang":"python"}`))
	if err != nil {
		return nil, err
	}
	var sess struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("POST /v1/sessions: %d %v", resp.StatusCode, err)
	}
	defer func() {
		req, _ := http.NewRequest("DELETE", made+"/v1/sessions/"+sess.ID, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	call := func() error {
		resp, err := http.Post(called+"/v1/sessions/"+sess.ID+"/runs", "application/json", strings.NewReader(`{"code":"print(1)"}`))
		if err != nil {
			return err
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"stdout":"1\n"`)) {
			return fmt.Errorf("session call: %d %s", resp.StatusCode, answer)
		}
		return nil
	}
	// The first call waits for the interpreter to start.
	if err := call(); err != nil {
		return nil, err
	}
	progress("session calls (warm interpreter): %d, one every 0.5 s", n)
	var times []time.Duration
	for i := 0; i < n; i++ {
		time.Sleep(500 * time.Millisecond)
		t := time.Now()
		if err := call(); err != nil {
			return nil, err
		}
		times = append(times, time.Since(t))
	}
	return times, nil
}
