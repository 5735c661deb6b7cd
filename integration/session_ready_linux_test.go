package integration

// Ready sessions: made and preloaded ahead of requests, claimed by one caller each.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readyProbe prints what a call can see of its session, after importing
// the preloaded modules (a fresh session's state after the same import):
// everything but the clock must be the same in a ready session and a
// fresh one. (The interpreter's PID is not: it varies from one fresh
// session to the next.)
const readyProbe = `import numpy, pandas, matplotlib, matplotlib.pyplot
import os, sys, json, resource
print(json.dumps({
    "cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv, "path": sys.path,
    "tmp": sorted(os.listdir("/tmp")), "workspace": sorted(os.listdir("/workspace")),
    "names": sorted(globals()), "ids": [os.getuid(), os.getgid(), os.getppid()],
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE), "umask": os.umask(0o22),
}, sort_keys=True))`

// readyMetric reads a series of the server's metrics, with token.
func readyMetric(t *testing.T, s *server, token, name string) int {
	t.Helper()
	_, _, data := sessionDo(t, s, sessionRequest(token, "GET", s.url+"/metrics", ""))
	var n int
	for _, l := range strings.Split(string(data), "\n") {
		if _, err := fmt.Sscanf(l, name+" %d", &n); err == nil {
			return n
		}
	}
	t.Fatalf("no %s in the metrics: %s", name, data)
	return 0
}

// waitReady waits until the server has n ready sessions waiting.
func waitReady(t *testing.T, s *server, token string, n int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for readyMetric(t, s, token, "boxer_ready_sessions") != n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d ready sessions after 90s: %s", n, s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newSession makes a session with token and returns it.
func newSession(t *testing.T, s *server, token, body string) runner.Session {
	t.Helper()
	code, data := sessionHTTP(t, s, token, "POST", "/v1/sessions", body)
	var sess runner.Session
	if code != 201 || json.Unmarshal(data, &sess) != nil {
		t.Fatalf("create %s: %d %s", body, code, data)
	}
	return sess
}

// callSession runs code in session id with token and returns its result.
func callSession(t *testing.T, s *server, token, id, code string) result {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"code": code, "timeout": "60s"})
	status, data := sessionHTTP(t, s, token, "POST", "/v1/sessions/"+id+"/runs", string(body))
	var res result
	if status != 200 || json.Unmarshal(data, &res) != nil || res.ExitCode != 0 {
		t.Fatalf("call %q in %s: %d %s", code, id, status, data)
	}
	return res
}

// preloaded says whether session id's interpreter had pandas imported
// before its first call, and how long that call (importing pandas, with
// imports) took.
func preloaded(t *testing.T, s *server, token, id string, imports bool) (bool, time.Duration) {
	t.Helper()
	code := "import sys\nprint('pandas' in sys.modules)"
	if imports {
		code += "\nimport pandas"
	}
	res := callSession(t, s, token, id, code)
	return strings.TrimSpace(res.Stdout) == "True", time.Duration(res.DurationMs * float64(time.Millisecond))
}

// TestSessionReady: on a server with ready sessions, a matching create
// takes one (its interpreter had pandas imported before the first call,
// which is fast; its clocks start at the create), and nothing a call sees
// differs from a fresh session's; two creates at once never get the same
// one, and another token neither sees nor claims it; the pool refills;
// preload false, or a request of another shape, gets a fresh session and
// leaves the ready one; nothing is left after a shutdown, nor after a
// SIGKILL and the next boxer command.
func TestSessionReady(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens, "--warm", "", "--ready-sessions", "1", "--ready", "python-data:"+rt, "--concurrency", "2", "--max-sessions", "16", "--max-sessions-per-caller", "16")
			waitReady(t, s, a, 1)
			body := `{"lang":"python-data","runtime":"` + rt + `","idle_timeout":"5m","lifetime":"30m"}`

			before := time.Now().Truncate(time.Second)
			ready := newSession(t, s, a, body)
			if got := readyMetric(t, s, a, "boxer_ready_sessions_claimed_total"); got != 1 {
				t.Fatalf("claimed = %d, want 1", got)
			}
			if ready.CreatedAt.Before(before) || ready.ExpiresAt.Sub(ready.CreatedAt) != 30*time.Minute || int64(ready.IdleTimeout) != 300 {
				t.Errorf("ready session's clocks: %+v, want created now, 30m lifetime, 5m idle", ready)
			}
			isReady, readyImport := preloaded(t, s, a, ready.ID, true)
			fresh := newSession(t, s, a, strings.Replace(body, "{", `{"preload":false,`, 1))
			isFresh, freshImport := preloaded(t, s, a, fresh.ID, true)
			t.Logf("first call importing pandas: ready %s, fresh %s", readyImport, freshImport)
			if !isReady || isFresh {
				t.Errorf("pandas imported before the first call: ready %v, preload false %v; want true, false", isReady, isFresh)
			}
			if readyImport > freshImport/2 {
				t.Errorf("a ready session's first import of pandas took %s, a fresh one's %s: want at most half", readyImport, freshImport)
			}
			if got, want := callSession(t, s, a, ready.ID, readyProbe).Stdout, callSession(t, s, a, fresh.ID, readyProbe).Stdout; got != want {
				t.Errorf("a ready session differs from a fresh one:\n ready %s\n fresh %s", got, want)
			}

			// Two creates at once, of two tokens, with one ready: never the
			// same session, and each sees only its own.
			waitReady(t, s, a, 1)
			var wg sync.WaitGroup
			got := make([]runner.Session, 2)
			for i, tok := range []string{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i] = newSession(t, s, tok, body)
				}()
			}
			wg.Wait()
			if got[0].ID == got[1].ID {
				t.Fatalf("two creates got the same session %s", got[0].ID)
			}
			if n := readyMetric(t, s, a, "boxer_ready_sessions_claimed_total"); n != 2 {
				t.Errorf("claimed = %d after two creates with one ready, want 2", n)
			}
			for i, tok := range []string{a, b} {
				other := got[1-i].ID
				if _, data := sessionHTTP(t, s, tok, "GET", "/v1/sessions", ""); strings.Contains(string(data), other) || !strings.Contains(string(data), got[i].ID) {
					t.Errorf("token %d lists %s", i, data)
				}
				if code, data := sessionHTTP(t, s, tok, "POST", "/v1/sessions/"+other+"/runs", `{"code":"print(1)"}`); code != 404 {
					t.Errorf("token %d calls the other's session: %d %s", i, code, data)
				}
			}

			// The pool refills; another shape, or preload false, leaves
			// the ready one where it is.
			waitReady(t, s, a, 1)
			for _, other := range []string{
				`{"lang":"python-data","runtime":"` + rt + `","memory":"512m"}`,
				`{"lang":"python","runtime":"` + rt + `"}`,
				`{"lang":"python-data","runtime":"` + rt + `","files":{"a.csv":"x\n1\n"}}`,
				`{"lang":"python-data","runtime":"` + rt + `","preload":false}`,
			} {
				sess := newSession(t, s, b, other)
				if pre, _ := preloaded(t, s, b, sess.ID, false); pre {
					t.Errorf("%s took a ready session", other)
				}
			}
			if n, w := readyMetric(t, s, a, "boxer_ready_sessions_claimed_total"), readyMetric(t, s, a, "boxer_ready_sessions"); n != 2 || w != 1 {
				t.Errorf("after creates of other shapes: claimed %d, waiting %d; want 2, 1", n, w)
			}

			stopServer(t, s)
			assertClean(t)

			// SIGKILL: the ready session is left, and the next boxer
			// command reaps it.
			s = startServer(t, "--token-file", tokens, "--warm", "", "--ready-sessions", "1", "--ready", "python-data:"+rt)
			waitReady(t, s, a, 1)
			must(t, s.cmd.Process.Kill())
			_ = s.cmd.Wait()
			if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
				t.Fatalf("run: %s", r.stderr)
			}
			assertClean(t)
		})
	}
}

// stopServer sends the server SIGTERM and waits for it to exit.
func stopServer(t *testing.T, s *server) {
	t.Helper()
	must(t, s.cmd.Process.Signal(os.Interrupt))
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not stop: %s", s.log)
	}
	if !strings.Contains(s.log.String(), "boxer: stopped") {
		t.Errorf("the server did not say it stopped: %s", s.log)
	}
}

// TestSessionReadyMCP: create_session of boxer mcp takes a ready session
// (pandas imported before its first call), and preload false a fresh one;
// nothing is left once the client disconnects.
func TestSessionReadyMCP(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) { testSessionReadyMCP(t, rt) })
	}
}

func testSessionReadyMCP(t *testing.T, rt string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp", "--warm", "", "--ready-sessions", "1", "--ready", "python-data:"+rt)
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	// A failure disconnects before the context ends, which would kill
	// boxer mcp and leave its sessions to the next command.
	defer func() {
		_ = session.Close()
		_ = cmd.Wait()
	}()
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", tool, args, err, res)
		}
		var m map[string]any
		data, _ := json.Marshal(res.StructuredContent)
		must(t, json.Unmarshal(data, &m))
		return m
	}
	// preloaded makes a session with args and says whether pandas was
	// imported before its first call.
	preloaded := func(args map[string]any) bool {
		id := call("create_session", args)["id"].(string)
		out := call("run_code", map[string]any{"session_id": id, "code": "import sys\nprint('pandas' in sys.modules)"})
		call("close_session", map[string]any{"session_id": id})
		return out["stdout"] == "True\n"
	}
	if preloaded(map[string]any{"lang": "python-data", "runtime": rt, "preload": false}) {
		t.Errorf("create_session with preload false took a ready session")
	}
	// The ready session is made in the background: the first creates may
	// come before it.
	for deadline := time.Now().Add(90 * time.Second); !preloaded(map[string]any{"lang": "python-data", "runtime": rt}); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("create_session took no ready session in 90s")
		}
	}
	must(t, session.Close())
	_ = cmd.Wait()
	assertClean(t)
}

// readyIDs lists the ready sessions in containerd (made or being made).
func readyIDs(t *testing.T) []string {
	t.Helper()
	cs, err := client.Containers(context.Background(), `labels."`+reaper.LabelSessionReady+`"`)
	if err != nil {
		t.Fatalf("listing ready sessions: %v", err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID())
	}
	return ids
}

// TestSessionReadyAge: a ready session no request takes is replaced once
// it is --ready-max-age old, and removed; its replacement is preloaded.
func TestSessionReadyAge(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			s := startServer(t, "--warm", "", "--ready-sessions", "1", "--ready", "python-data:"+rt, "--ready-max-age", "3s")
			waitReady(t, s, "", 1)
			first := readyIDs(t)
			if len(first) != 1 {
				t.Fatalf("ready sessions in containerd: %v, want one", first)
			}
			deadline := time.Now().Add(90 * time.Second)
			for ids := readyIDs(t); len(ids) != 1 || ids[0] == first[0] || readyMetric(t, s, "", "boxer_ready_sessions") != 1; ids = readyIDs(t) {
				if time.Now().After(deadline) {
					t.Fatalf("ready session %s not replaced after 90s: %v", first[0], ids)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if _, err := client.LoadContainer(context.Background(), first[0]); err == nil {
				t.Errorf("the old ready session %s is still there", first[0])
			}
			sess := newSession(t, s, "", `{"lang":"python-data","runtime":"`+rt+`"}`)
			if pre, _ := preloaded(t, s, "", sess.ID, false); !pre {
				t.Errorf("the replacement ready session was not preloaded")
			}
			stopServer(t, s)
			assertClean(t)
		})
	}
}
