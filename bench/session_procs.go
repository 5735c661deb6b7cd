//go:build linux

package main

// Issue 43's rows: `true` started through a session's process server over
// HTTP (to its exit, in the background, with a terminal), on runc and
// runsc, timed in turns with what they are read against: runc exec into a
// running hardened container, and a warm session call.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The rows' names; the runtime ends each in parentheses.
const (
	passCallRow = "session call `pass` (warm interpreter, runc)"
	procTrue    = "exec `true` in a live session over HTTP, start to exit reported"
	procBg      = "background start of `true` in a live session over HTTP, answered when started"
	procPty     = "PTY open in a live session over HTTP, to its first output"
)

// procRow is the name of row kind (procTrue, procBg, procPty) on runtime.
func procRow(kind, runtime string) string { return kind + " (" + runtime + ")" }

// procRowNames are issue 43's HTTP rows and their baselines, in the order
// benchProcs times them in each turn.
func procRowNames(withRunsc bool) []string {
	names := []string{runcExecRow, passCallRow}
	runtimes := []string{"runc"}
	if withRunsc {
		runtimes = append(runtimes, "runsc")
	}
	for _, kind := range []string{procTrue, procBg, procPty} {
		for _, rt := range runtimes {
			names = append(names, procRow(kind, rt))
		}
	}
	return names
}

// benchProcs times n turns of every row of procRowNames on one server, a
// bash session per runtime (a python session on gVisor has no process
// server: its interpreter is its first program) and a python one for the
// call; work holds the bench's bundle (makeBundle), run by runc.
func benchProcs(n int, boxerBin, address, work, runc string, withRunsc bool) ([]row, error) {
	live, err := startLiveBundle(runc, work)
	if err != nil {
		return nil, err
	}
	defer live.stop()
	s, err := startServer(boxerBin, address, "--warm-size", "0")
	if err != nil {
		return nil, err
	}
	defer s.stop()
	py, err := newSession(s.url, `{"lang":"python"}`)
	if err != nil {
		return nil, err
	}
	defer deleteSession(py)
	// A row's once is timed; what it leaves to do after (a background
	// process's end, the rest of a terminal's output) is not.
	once := map[string]func() (after func() error, err error){
		runcExecRow: allTimed(live.exec),
		passCallRow: allTimed(func() error {
			answer, err := httpDo("POST", py+"/runs", `{"code":"pass"}`)
			if err == nil && !bytes.Contains(answer, []byte(`"exit_code":0`)) {
				err = fmt.Errorf("session call: %s", answer)
			}
			return err
		}),
	}
	runtimes := []string{"runc"}
	if withRunsc {
		runtimes = append(runtimes, "runsc")
	}
	for _, rt := range runtimes {
		sess, err := newSession(s.url, `{"lang":"bash","runtime":"`+rt+`"}`)
		if err != nil {
			return nil, err
		}
		defer deleteSession(sess)
		p := sess + "/processes"
		once[procRow(procTrue, rt)] = allTimed(func() error { return procToEnd(p, `{"args":["true"]}`) })
		once[procRow(procBg, rt)] = func() (func() error, error) { return procStart(p) }
		once[procRow(procPty, rt)] = func() (func() error, error) { return procPtyOpen(p) }
	}
	names := procRowNames(withRunsc)
	// One warm-up each: the interpreter's start, the first fork of each
	// process server, the page cache.
	for _, name := range names {
		if err := runOnce(once[name]); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	progress("session processes and their baselines: %d rows, %d turns", len(names), n)
	times := make([][]time.Duration, len(names))
	for i := range n {
		for j, name := range names {
			t := time.Now()
			after, err := once[name]()
			d := time.Since(t)
			if err == nil && after != nil {
				err = after()
			}
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", name, i, err)
			}
			times[j] = append(times[j], d)
		}
	}
	rows := make([]row, len(names))
	for j, name := range names {
		rows[j] = row{name: name, times: times[j]}
	}
	return rows, nil
}

// allTimed is a row's once whose work is all in its time.
func allTimed(f func() error) func() (func() error, error) {
	return func() (func() error, error) { return nil, f() }
}

// runOnce runs a row's once and what it leaves after (a warm-up).
func runOnce(once func() (func() error, error)) error {
	after, err := once()
	if err == nil && after != nil {
		err = after()
	}
	return err
}

// newSession makes a session on the server at url with body, and is its URL.
func newSession(url, body string) (string, error) {
	answer, err := httpDo("POST", url+"/v1/sessions", body)
	if err != nil {
		return "", err
	}
	var sess struct{ ID string }
	if err := json.Unmarshal(answer, &sess); err != nil {
		return "", err
	}
	return url + "/v1/sessions/" + sess.ID, nil
}

func deleteSession(url string) {
	if _, err := httpDo("DELETE", url, ""); err != nil {
		progress("removing session: %v", err)
	}
}

// startProc starts a process in the session whose processes are at procs,
// and is its output's URL.
func startProc(procs, body string) (string, error) {
	answer, err := httpDo("POST", procs, body)
	if err != nil {
		return "", err
	}
	var p struct{ ID int }
	if err := json.Unmarshal(answer, &p); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%d/output", procs, p.ID), nil
}

// procToEnd starts a process and follows its output to its end, which
// must be an exit 0.
func procToEnd(procs, body string) error {
	output, err := startProc(procs, body)
	if err != nil {
		return err
	}
	return readToEnd(output)
}

func readToEnd(output string) error {
	out, err := httpDo("GET", output, "")
	if err == nil && !bytes.Contains(out, []byte(`"exit_code":0`)) {
		err = fmt.Errorf("process: %s", out)
	}
	return err
}

// procStart starts `true` in the background, timed to the answer; the
// rest follows it to its end.
func procStart(procs string) (func() error, error) {
	output, err := startProc(procs, `{"args":["true"]}`)
	if err != nil {
		return nil, err
	}
	return func() error { return readToEnd(output) }, nil
}

// procPtyOpen starts a process with a terminal and reads its output to
// the first of the terminal's, timed; the rest reads on to its end.
func procPtyOpen(procs string) (func() error, error) {
	output, err := startProc(procs, `{"args":["echo","ready"],"pty":{"cols":80,"rows":24}}`)
	if err != nil {
		return nil, err
	}
	resp, err := http.Get(output)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %d", output, resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), `{"stream":"pty"`) {
			return func() error {
				defer resp.Body.Close()
				for lines.Scan() {
					if strings.HasPrefix(lines.Text(), `{"end"`) {
						if !strings.Contains(lines.Text(), `"exit_code":0`) {
							return fmt.Errorf("PTY process: %s", lines.Text())
						}
						return nil
					}
				}
				return fmt.Errorf("PTY process: its output ended before it did (%v)", lines.Err())
			}, nil
		}
		if strings.HasPrefix(lines.Text(), `{"end"`) {
			break
		}
	}
	resp.Body.Close()
	return nil, fmt.Errorf("PTY process: no output on its terminal (%v)", lines.Err())
}
