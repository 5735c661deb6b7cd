package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// concurrentFor is how long TestSessionConcurrentProcesses makes and
// removes sessions: several of the server's 5 s expiry sweeps, and many
// of the live-session counts each creation makes.
const concurrentFor = 40 * time.Second

// TestSessionConcurrentProcesses: one server with four HTTP clients, and
// three loops of CLI processes, each making a session, calling it once
// and removing it, all at once. Every boxer process's sweeps, counts and
// reaper see the others' sessions being made (a container with session
// labels whose task does not run yet): none may take one for an exited
// session and remove it under its maker. Every answer is a success, and
// nothing is left.
func TestSessionConcurrentProcesses(t *testing.T) {
	s := startServer(t, "--warm-size", "0", "--concurrency", "4", "--queue", "16", "--max-sessions", "32")
	var wg sync.WaitGroup
	var mu sync.Mutex
	rounds := map[string]int{}
	stop := time.Now().Add(concurrentFor)
	// failed stops every loop at the first failure: what follows it would
	// only repeat it.
	failed := make(chan struct{})
	var once sync.Once
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		once.Do(func() { close(failed) })
	}
	loop := func(name string, round func(n int) bool) {
		defer wg.Done()
		for n := 0; time.Now().Before(stop); n++ {
			select {
			case <-failed:
				return
			default:
			}
			if !round(n) {
				return
			}
			mu.Lock()
			rounds[name]++
			mu.Unlock()
		}
	}
	for i := range 4 {
		lang := []string{"python", "bash"}[i%2]
		name := fmt.Sprintf("http %d (%s)", i, lang)
		wg.Add(1)
		go loop(name, func(n int) bool {
			code, data, err := httpDo(s, "POST", "/v1/sessions", `{"lang":"`+lang+`"}`)
			var sess runner.Session
			if err != nil || code != http.StatusCreated || json.Unmarshal(data, &sess) != nil {
				fail("%s, round %d: create: %d %s %v", name, n, code, data, err)
				return false
			}
			code, data, err = httpDo(s, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":`+strconv.Quote(say(lang))+`}`)
			var res result
			if err != nil || code != http.StatusOK || json.Unmarshal(data, &res) != nil || res.ExitCode != 0 || res.Stdout != "ok\n" {
				fail("%s, round %d: call in %s: %d %s %v", name, n, sess.ID, code, data, err)
				return false
			}
			if code, data, err = httpDo(s, "DELETE", "/v1/sessions/"+sess.ID, ""); err != nil || code != http.StatusNoContent {
				fail("%s, round %d: remove %s: %d %s %v", name, n, sess.ID, code, data, err)
				return false
			}
			return true
		})
	}
	for i := range 3 {
		lang := []string{"python", "bash", "python"}[i]
		name := fmt.Sprintf("cli %d (%s)", i, lang)
		wg.Add(1)
		go loop(name, func(n int) bool {
			r, err := boxerProcess("session", "create", "--lang", lang)
			if err != nil || r.code != 0 {
				fail("%s, round %d: session create: %d %q %v", name, n, r.code, r.stderr, err)
				return false
			}
			id := strings.TrimSpace(r.stdout)
			if r, err = boxerProcess("session", "run", id, "-c", say(lang)); err != nil || r.code != 0 || r.stdout != "ok\n" {
				fail("%s, round %d: session run %s: %d %q %q %v", name, n, id, r.code, r.stdout, r.stderr, err)
				return false
			}
			if r, err = boxerProcess("session", "rm", id); err != nil || r.code != 0 {
				fail("%s, round %d: session rm %s: %d %q %v", name, n, id, r.code, r.stderr, err)
				return false
			}
			return true
		})
	}
	wg.Wait()
	t.Logf("rounds: %v", rounds)
	if len(rounds) != 7 && !t.Failed() {
		t.Errorf("a loop made no round: %v", rounds)
	}
	for _, l := range s.auditLines(t) {
		if l["event"] == "session_ended" && l["reason"] != "removed" {
			t.Errorf("the server ended a session by itself: %v", l)
		}
	}
	s.stop(t)
	assertClean(t)
}

// say is code that prints "ok" in lang.
func say(lang string) string {
	if lang == "python" {
		return "print('ok')"
	}
	return "echo ok"
}

// httpDo makes one request to the server without failing the test (it
// runs in goroutines).
func httpDo(s *server, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// boxerProcess runs one boxer CLI process, as boxer does, without failing
// the test (it runs in goroutines).
func boxerProcess(args ...string) (run, error) {
	cmd := exec.Command(boxerBin, append([]string{"--namespace", namespace}, args...)...)
	cmd.Env = testEnv
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code, err = ee.ExitCode(), nil
	}
	return r, err
}
