//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// benchSession measures calls in a python session over HTTP: the state
// is warm (one interpreter), so a call is an exec and a hand-over.
func benchSession(n int, boxerBin, address string) (row, error) {
	s, err := startServer(boxerBin, address, "--warm-size", "0")
	if err != nil {
		return row{}, err
	}
	defer s.stop()
	resp, err := http.Post(s.url+"/v1/sessions", "application/json", strings.NewReader(`{"lang":"python"}`))
	if err != nil {
		return row{}, err
	}
	var sess struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return row{}, fmt.Errorf("POST /v1/sessions: %d %v", resp.StatusCode, err)
	}
	call := func(int) error {
		resp, err := http.Post(s.url+"/v1/sessions/"+sess.ID+"/runs", "application/json", strings.NewReader(`{"code":"print(1)"}`))
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
	if err := call(0); err != nil {
		return row{}, err
	}
	progress("session calls (warm interpreter): %d, one every 0.5 s", n)
	var times []time.Duration
	for i := 0; i < n; i++ {
		time.Sleep(500 * time.Millisecond)
		t := time.Now()
		if err := call(i); err != nil {
			return row{}, err
		}
		times = append(times, time.Since(t))
	}
	return row{name: "session call (warm interpreter), every 0.5 s", times: times}, nil
}
