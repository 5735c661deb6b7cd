//go:build linux

package main

// Restoring a gVisor python-data session from a checkpoint, over HTTP.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// The rows of benchSnapshot, by name.
const (
	forkRow    = "fork of a python-data session (pandas, a DataFrame) + its first call reading it (runsc)"
	restoreRow = "checkpointed python-data session resumed from disk + its first call reading the DataFrame (runsc)"
	coldPdRow  = "cold python-data run importing pandas and making the DataFrame (runsc)"
)

// dataFrame is the state the rows restore: pandas and a DataFrame.
const dataFrame = "import pandas as pd\ndf = pd.DataFrame({'a': range(1000), 'b': [str(i) for i in range(1000)]})\n"

// benchSnapshot measures what an agent that comes back to a data session
// waits: a fork of it, and a resume of it from disk, each to the answer
// of a call that reads the DataFrame; against a cold run that makes the
// same state from nothing (fewer of those: each takes seconds).
func benchSnapshot(n int, boxerBin, address string) ([]row, error) {
	s, err := startServer(boxerBin, address, "--warm-size", "0")
	if err != nil {
		return nil, err
	}
	defer s.stop()
	do := func(method, path, body string) ([]byte, error) { return httpDo(method, s.url+path, body) }
	call := func(id, code string) error {
		body, _ := json.Marshal(map[string]string{"code": code})
		answer, err := do("POST", "/v1/sessions/"+id+"/runs", string(body))
		if err == nil && !bytes.Contains(answer, []byte(`"stdout":"1000\n"`)) {
			err = fmt.Errorf("session call: %s", answer)
		}
		return err
	}
	answer, err := do("POST", "/v1/sessions", `{"lang":"python-data","runtime":"runsc"}`)
	var sess struct{ ID string }
	if err == nil {
		err = json.Unmarshal(answer, &sess)
	}
	if err == nil {
		err = call(sess.ID, dataFrame+"print(len(df))")
	}
	if err != nil {
		return nil, err
	}
	progress("fork and resume from a checkpoint (runsc): %d each", n)
	var forks, restores []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		answer, err := do("POST", "/v1/sessions/"+sess.ID+"/fork", "")
		var forked struct{ Sessions []struct{ ID string } }
		if err == nil {
			err = json.Unmarshal(answer, &forked)
		}
		if err == nil && len(forked.Sessions) != 1 {
			err = fmt.Errorf("fork: %s", answer)
		}
		if err == nil {
			err = call(forked.Sessions[0].ID, "print(len(df))")
		}
		if err != nil {
			return nil, err
		}
		forks = append(forks, time.Since(t))
		if _, err := do("DELETE", "/v1/sessions/"+forked.Sessions[0].ID, ""); err != nil {
			return nil, err
		}
		if _, err := do("POST", "/v1/sessions/"+sess.ID+"/checkpoint", ""); err != nil {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
		t = time.Now()
		if _, err := do("POST", "/v1/sessions/"+sess.ID+"/resume", ""); err != nil {
			return nil, err
		}
		if err := call(sess.ID, "print(len(df))"); err != nil {
			return nil, err
		}
		restores = append(restores, time.Since(t))
	}
	cold := max(n/4, 3)
	progress("cold python-data runs importing pandas (runsc): %d", cold)
	var colds []time.Duration
	body, _ := json.Marshal(map[string]any{"lang": "python-data", "runtime": "runsc", "code": dataFrame + "print(len(df))"})
	for i := 0; i < cold; i++ {
		t := time.Now()
		answer, err := do("POST", "/v1/runs", string(body))
		if err == nil && !bytes.Contains(answer, []byte(`"stdout":"1000\n"`)) {
			err = fmt.Errorf("cold run: %s", answer)
		}
		if err != nil {
			return nil, err
		}
		colds = append(colds, time.Since(t))
	}
	return []row{{name: forkRow, times: forks}, {name: restoreRow, times: restores}, {name: coldPdRow, times: colds}}, nil
}

// printSnapshotRatios says what the restores are against the cold run.
func printSnapshotRatios(rows map[string]time.Duration) {
	if cold := rows[coldPdRow]; cold > 0 {
		for _, name := range []string{forkRow, restoreRow} {
			if d := rows[name]; d > 0 {
				fmt.Printf("%s / %s = %.2f (%.0f against %.0f ms p50)\n", name, coldPdRow, float64(d)/float64(cold), ms(d), ms(cold))
			}
		}
	}
}
