package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	fspb "github.com/boxer-dev/boxer/e2b/envdspec/filesystem"
	"github.com/boxer-dev/boxer/e2b/envdspec/filesystem/filesystemconnect"
	procpb "github.com/boxer-dev/boxer/e2b/envdspec/process"
	"github.com/boxer-dev/boxer/e2b/envdspec/process/processconnect"
	"github.com/boxer-dev/boxer/runner"
)

// Many tenants on one server (SECURITY.md): what one caller holds at once
// (sessions, watches, streams, processes) is capped per caller, so that
// one caller never exhausts what all share; the others are unaffected.

// limitAnswer checks a 429 that names limit and its value max.
func limitAnswer(t *testing.T, what string, code int, data []byte, limit string, max int) {
	t.Helper()
	var e struct {
		Error, Limit string
		Max          int
	}
	if code != http.StatusTooManyRequests || json.Unmarshal(data, &e) != nil || e.Limit != limit || e.Max != max || !strings.Contains(e.Error, limit) {
		t.Fatalf("%s: %d %s, want 429 naming %s %d", what, code, data, limit, max)
	}
}

// TestLimitsSessionsPerCaller: one caller fills its share of the sessions
// (a quarter of --max-sessions 8) and is refused the next, naming the
// limit, while another caller still gets one. On runc and runsc.
func TestLimitsSessionsPerCaller(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			s := startServer(t, "--token-file", tokens, "--max-sessions", "8", "--runtime", rt, "--warm", "")
			var ids []string
			t.Cleanup(func() {
				for _, id := range ids {
					sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+id, "")
				}
			})
			for i := range 2 {
				code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash"}`)
				var sess runner.Session
				if code != 201 || json.Unmarshal(data, &sess) != nil {
					t.Fatalf("caller a's session %d: %d %s", i+1, code, data)
				}
				ids = append(ids, sess.ID)
			}
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash"}`)
			limitAnswer(t, "caller a's third session", code, data, "max-sessions-per-caller", 2)
			code, data = sessionHTTP(t, s, b, "POST", "/v1/sessions", `{"lang":"bash"}`)
			var other runner.Session
			if code != 201 || json.Unmarshal(data, &other) != nil {
				t.Fatalf("caller b's session beside a full caller a: %d %s", code, data)
			}
			if code, data := sessionHTTP(t, s, b, "DELETE", "/v1/sessions/"+other.ID, ""); code != 204 {
				t.Errorf("delete: %d %s", code, data)
			}
			// Room again once one of its own ends.
			if code, data := sessionHTTP(t, s, a, "DELETE", "/v1/sessions/"+ids[1], ""); code != 204 {
				t.Fatalf("delete: %d %s", code, data)
			}
			ids = ids[:1]
			if code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash"}`); code != 201 {
				t.Errorf("caller a's session after one ended: %d %s", code, data)
			} else {
				var sess runner.Session
				must(t, json.Unmarshal(data, &sess))
				ids = append(ids, sess.ID)
			}
		})
	}
}

// e2bSandbox makes a sandbox of key on e's control plane, as the SDKs do,
// and returns its ID and envd access token.
func (e *e2bServer) sandbox(t *testing.T, key string) (id, token string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.api+"/sandboxes", strings.NewReader(`{"templateID":"base","timeout":600}`))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("creating a sandbox: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		SandboxID, EnvdAccessToken string
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 201 {
		t.Fatalf("creating a sandbox: %d %v", resp.StatusCode, err)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", e.api+"/sandboxes/"+out.SandboxID, nil)
		req.Header.Set("X-Api-Key", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return out.SandboxID, out.EnvdAccessToken
}

// envdHeaders route a Connect request to sandbox id's envd, as the SDKs
// do with E2B_SANDBOX_URL.
func envdHeaders(h http.Header, id, token string) {
	h.Set("E2b-Sandbox-Id", id)
	h.Set("E2b-Sandbox-Port", "49983")
	h.Set("X-Access-Token", token)
}

// watchDir opens a WatchDir stream and waits for its start event: nil,
// or the error that refused it.
func watchDir(ctx context.Context, fs filesystemconnect.FilesystemClient, id, token, dir string) (*connect.ServerStreamForClient[fspb.WatchDirResponse], error) {
	req := connect.NewRequest(&fspb.WatchDirRequest{Path: dir})
	envdHeaders(req.Header(), id, token)
	st, err := fs.WatchDir(ctx, req)
	if err != nil {
		return nil, err
	}
	if !st.Receive() {
		err := st.Err()
		st.Close()
		if err == nil {
			err = errors.New("the stream ended before its start event")
		}
		return nil, err
	}
	if st.Msg().GetStart() == nil {
		st.Close()
		return nil, fmt.Errorf("first event %v, want start", st.Msg())
	}
	return st, nil
}

// refusedNaming checks a Connect error: resource_exhausted naming limit.
func refusedNaming(t *testing.T, what string, err error, limit string) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), limit) {
		t.Fatalf("%s: %v, want resource_exhausted naming %s", what, err, limit)
	}
}

// procStatus reads a figure (Threads, VmRSS in kB) of process pid.
func procStatus(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestLimitsWatchFlood: one E2B key opens 130 WatchDir streams on its own
// sandbox (each an inotify instance of the host's root, of which the
// kernel allows 128): past --max-watches-per-caller each is refused with
// resource_exhausted naming it, and so is its CreateWatcher; a second
// key's WatchDir and CreateWatcher and a boxer-API caller's fs/watch all
// work meanwhile, and serve's threads and memory stay flat. On runc and
// runsc.
func TestLimitsWatchFlood(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			tok := "token-a-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(tok+"\n"), 0o600))
			e := startE2B(t, "--token-file", tokens, "--runtime", rt, "--warm", "")
			flooder, flooderToken := e.sandbox(t, e.keys[0])
			other, otherToken := e.sandbox(t, e.keys[1])
			fs := filesystemconnect.NewFilesystemClient(http.DefaultClient, e.api, connect.WithProtoJSON())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pid := e.cmd.Process.Pid
			// A first watch of the flooder's (it stays), then the figures.
			first, err := watchDir(ctx, fs, flooder, flooderToken, "/home/user")
			if err != nil {
				t.Fatalf("a first watch: %v\n%s", err, e.log)
			}
			defer first.Close()
			threads, rss := procStatus(t, pid, "Threads"), procStatus(t, pid, "VmRSS")
			held := 1
			for i := range 130 {
				st, err := watchDir(ctx, fs, flooder, flooderToken, "/home/user")
				if err == nil {
					defer st.Close()
					held++
					if held > runner.DefaultWatchesPerCaller {
						t.Fatalf("one key's watch %d (flood %d) was not refused: past max-watches-per-caller %d", held, i+1, runner.DefaultWatchesPerCaller)
					}
					continue
				}
				if held < runner.DefaultWatchesPerCaller {
					t.Fatalf("watch %d refused with %d held: %v", i+1, held, err)
				}
				refusedNaming(t, fmt.Sprintf("watch %d of one key", i+1), err, "max-watches-per-caller")
			}
			cw := connect.NewRequest(&fspb.CreateWatcherRequest{Path: "/home/user"})
			envdHeaders(cw.Header(), flooder, flooderToken)
			_, err = fs.CreateWatcher(ctx, cw)
			refusedNaming(t, "the flooder's CreateWatcher", err, "max-watches-per-caller")

			// The others are unaffected.
			st, err := watchDir(ctx, fs, other, otherToken, "/home/user")
			if err != nil {
				t.Fatalf("the second key's WatchDir: %v", err)
			}
			defer st.Close()
			cw = connect.NewRequest(&fspb.CreateWatcherRequest{Path: "/home/user"})
			envdHeaders(cw.Header(), other, otherToken)
			if _, err := fs.CreateWatcher(ctx, cw); err != nil {
				t.Fatalf("the second key's CreateWatcher: %v", err)
			}
			code, data := sessionHTTP(t, e.server, tok, "POST", "/v1/sessions", `{"lang":"bash"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("a boxer-API caller's session: %d %s", code, data)
			}
			t.Cleanup(func() { sessionHTTP(t, e.server, tok, "DELETE", "/v1/sessions/"+sess.ID, "") })
			req := sessionRequest(tok, "GET", e.url+"/v1/sessions/"+sess.ID+"/fs/watch?path="+url.QueryEscape("/workspace"), "")
			req = req.WithContext(ctx)
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatalf("fs/watch: %v", err)
			}
			defer resp.Body.Close()
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			if resp.StatusCode != 200 || !strings.Contains(line, `"start"`) {
				t.Fatalf("a boxer-API caller's fs/watch beside the flood: %d %q", resp.StatusCode, line)
			}
			if n, kb := procStatus(t, pid, "Threads"), procStatus(t, pid, "VmRSS"); n > threads+8 || kb > rss+64<<10 {
				t.Errorf("serve during the flood: %d threads and %d kB resident, from %d and %d kB", n, kb, threads, rss)
			}
		})
	}
}

// TestLimitsProcessesAndStreams: one caller's background processes and
// open streams stop at their ceilings, refused with 429 (boxer's API) or
// resource_exhausted (E2B's envd) naming them; a Start refused its
// stream starts no process; another caller starts and follows its own. On
// runc and runsc.
func TestLimitsProcessesAndStreams(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			a, b := "token-a-0123456789abcdef", "token-b-0123456789abcdef"
			must(t, os.WriteFile(tokens, []byte(a+"\n"+b+"\n"), 0o600))
			e := startE2B(t, "--token-file", tokens, "--runtime", rt, "--warm", "", "--max-processes-per-caller", "3", "--max-streams-per-caller", "2")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			mk := func(tok string) string {
				code, data := sessionHTTP(t, e.server, tok, "POST", "/v1/sessions", `{"lang":"bash"}`)
				var sess runner.Session
				if code != 201 || json.Unmarshal(data, &sess) != nil {
					t.Fatalf("session: %d %s", code, data)
				}
				t.Cleanup(func() { sessionHTTP(t, e.server, tok, "DELETE", "/v1/sessions/"+sess.ID, "") })
				return sess.ID
			}
			sa, sb := mk(a), mk(b)
			start := func(tok, id string) (int, []byte) {
				return sessionHTTP(t, e.server, tok, "POST", "/v1/sessions/"+id+"/processes", `{"args":["sh","-c","echo up; sleep 300"]}`)
			}
			var refs []string
			for i := range 3 {
				code, data := start(a, sa)
				var p runner.ProcessInfo
				if code != 201 || json.Unmarshal(data, &p) != nil {
					t.Fatalf("process %d: %d %s", i+1, code, data)
				}
				refs = append(refs, strconv.Itoa(p.ID))
			}
			code, data := start(a, sa)
			limitAnswer(t, "a fourth process", code, data, "max-processes-per-caller", 3)
			// One that ended frees its place at once (a start is
			// refused only on a count made then).
			if code, data := sessionHTTP(t, e.server, a, "POST", "/v1/sessions/"+sa+"/processes/"+refs[2]+"/signal", `{"signal":"KILL"}`); code != 204 {
				t.Fatalf("kill: %d %s", code, data)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				_, data := sessionHTTP(t, e.server, a, "GET", "/v1/sessions/"+sa+"/processes", "")
				var list struct{ Processes []runner.ProcessInfo }
				running := 0
				if json.Unmarshal(data, &list) == nil {
					for _, p := range list.Processes {
						if p.Running {
							running++
						}
					}
				}
				if running == 2 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("the killed process runs on: %s", data)
				}
			}
			code, data = start(a, sa)
			var again runner.ProcessInfo
			if code != 201 || json.Unmarshal(data, &again) != nil {
				t.Fatalf("a process in the place of one that ended: %d %s", code, data)
			}
			refs[2] = strconv.Itoa(again.ID)
			code, data = start(b, sb)
			var bp runner.ProcessInfo
			if code != 201 || json.Unmarshal(data, &bp) != nil {
				t.Fatalf("another caller's process: %d %s", code, data)
			}
			follow := func(tok, id, ref string) *http.Response {
				req := sessionRequest(tok, "GET", e.url+"/v1/sessions/"+id+"/processes/"+ref+"/output", "").WithContext(ctx)
				resp, err := e.client.Do(req)
				if err != nil {
					t.Fatalf("output: %v", err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				return resp
			}
			for _, ref := range refs[:2] {
				if resp := follow(a, sa, ref); resp.StatusCode != 200 {
					t.Fatalf("following process %s: %d", ref, resp.StatusCode)
				}
			}
			// Each answered 200 with its first line: both streams are held.
			resp := follow(a, sa, refs[2])
			var ae struct {
				Error, Limit string
				Max          int
			}
			if resp.StatusCode != 429 || json.NewDecoder(resp.Body).Decode(&ae) != nil || ae.Limit != "max-streams-per-caller" || ae.Max != 2 {
				t.Fatalf("a third stream: %d %+v, want 429 naming max-streams-per-caller 2", resp.StatusCode, ae)
			}
			if resp := follow(b, sb, strconv.Itoa(bp.ID)); resp.StatusCode != 200 {
				t.Fatalf("another caller's stream: %d", resp.StatusCode)
			}

			// E2B's envd: a key's third process stream is refused, and
			// starts no process.
			id, token := e.sandbox(t, e.keys[0])
			pc := processconnect.NewProcessClient(http.DefaultClient, e.api, connect.WithProtoJSON())
			startE2B := func() (*connect.ServerStreamForClient[procpb.StartResponse], error) {
				req := connect.NewRequest(&procpb.StartRequest{Process: &procpb.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", "sleep 300"}}})
				envdHeaders(req.Header(), id, token)
				st, err := pc.Start(ctx, req)
				if err != nil {
					return nil, err
				}
				for st.Receive() {
					if st.Msg().GetEvent().GetStart() != nil {
						return st, nil
					}
				}
				st.Close()
				return nil, st.Err()
			}
			for i := range 2 {
				st, err := startE2B()
				if err != nil {
					t.Fatalf("E2B process %d: %v", i+1, err)
				}
				defer st.Close()
			}
			_, err := startE2B()
			refusedNaming(t, "a third E2B process stream", err, "max-streams-per-caller")
			list := connect.NewRequest(&procpb.ListRequest{})
			envdHeaders(list.Header(), id, token)
			deadline := time.Now().Add(10 * time.Second)
			for {
				res, err := pc.List(ctx, list)
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				if n := len(res.Msg.GetProcesses()); n == 2 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("%d processes run in the sandbox, want the 2 followed", n)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
