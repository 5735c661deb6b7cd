//go:build linux

package main

// Resuming a paused session, over HTTP.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// benchResume measures, in a python session over HTTP on runtime, how
// long a paused session takes from POST .../resume to the answer of its
// next call: what an agent coming back to a paused sandbox waits.
func benchResume(n int, boxerBin, address, runtime string) (row, error) {
	s, err := startServer(boxerBin, address, "--warm-size", "0")
	if err != nil {
		return row{}, err
	}
	defer s.stop()
	post := func(path, body string) ([]byte, error) {
		resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, answer)
		}
		return answer, nil
	}
	answer, err := post("/v1/sessions", `{"lang":"python","runtime":"`+runtime+`"}`)
	if err != nil {
		return row{}, err
	}
	var sess struct{ ID string }
	if err := json.Unmarshal(answer, &sess); err != nil {
		return row{}, err
	}
	path := "/v1/sessions/" + sess.ID
	call := func() error {
		answer, err := post(path+"/runs", `{"code":"x = globals().get('x', 0) + 1; print(x)"}`)
		if err == nil && !bytes.Contains(answer, []byte(`"exit_code":0`)) {
			err = fmt.Errorf("session call: %s", answer)
		}
		return err
	}
	if err := call(); err != nil {
		return row{}, err
	}
	progress("session resume after pause (%s): %d", runtime, n)
	var times []time.Duration
	for i := 0; i < n; i++ {
		if _, err := post(path+"/pause", ""); err != nil {
			return row{}, err
		}
		time.Sleep(200 * time.Millisecond)
		t := time.Now()
		if _, err := post(path+"/resume", ""); err != nil {
			return row{}, err
		}
		if err := call(); err != nil {
			return row{}, err
		}
		times = append(times, time.Since(t))
	}
	return row{name: "session resume after pause, to a call's answer (" + runtime + ")", times: times}, nil
}
