//go:build linux

package main

// A command exec'd in a live session, over HTTP.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// benchExec measures, in a python session over HTTP, a command started in
// the live session and followed to its end (POST .../processes, then GET
// .../output): what a coding agent's "run this in my sandbox" costs, to
// set beside a warm one-shot run (the target is half of one).
func benchExec(n int, boxerBin, address string) (row, error) {
	s, err := startServer(boxerBin, address, "--warm-size", "0")
	if err != nil {
		return row{}, err
	}
	defer s.stop()
	answer, err := httpDo("POST", s.url+"/v1/sessions", `{"lang":"python"}`)
	if err != nil {
		return row{}, err
	}
	var sess struct{ ID string }
	if err := json.Unmarshal(answer, &sess); err != nil {
		return row{}, err
	}
	base := s.url + "/v1/sessions/" + sess.ID + "/processes"
	exec := func() error {
		answer, err := httpDo("POST", base, `{"args":["python3","-c","print(1)"]}`)
		if err != nil {
			return err
		}
		var p struct{ ID int }
		if err := json.Unmarshal(answer, &p); err != nil {
			return err
		}
		out, err := httpDo("GET", fmt.Sprintf("%s/%d/output", base, p.ID), "")
		if err == nil && !bytes.Contains(out, []byte(`"exit_code":0`)) {
			err = fmt.Errorf("exec: %s", out)
		}
		return err
	}
	if err := exec(); err != nil {
		return row{}, err
	}
	progress("exec in a live session: %d", n)
	var times []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		if err := exec(); err != nil {
			return row{}, err
		}
		times = append(times, time.Since(t))
	}
	return row{name: "exec `python3 -c 'print(1)'` in a live session, over HTTP (runc)", times: times}, nil
}

// httpDo sends one request and reads its answer, which must be 2xx.
func httpDo(method, url, body string) ([]byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, answer)
	}
	return answer, nil
}
