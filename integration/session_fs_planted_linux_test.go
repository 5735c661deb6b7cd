package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// What a sandbox plants where the host opens its files: FIFOs nobody
// reads, symlinks out, names too long. Each file operation on one answers
// a 4xx naming the path at once; none leaves a thread of the server
// waiting, and a removed session leaves no mount behind.

// plantedPuts is how many PUTs go onto FIFOs at once: each of them, when
// the server waited in openat, held a thread for good.
const plantedPuts = 50

// prompt is how long a refusal may take, under load.
const prompt = 5 * time.Second

// answer is one HTTP answer and how long it took.
type answer struct {
	code int
	body string
	took time.Duration
	err  error
}

// plantedDo sends one request with token through the OpenAPI-checking
// client, giving up after twice prompt (a server that waits would hold
// the test for good).
func plantedDo(s *server, token, method, path, body string) answer {
	c := *s.client
	c.Timeout = 2 * prompt
	start := time.Now()
	resp, err := c.Do(sessionRequest(token, method, s.url+path, body))
	if err != nil {
		return answer{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(data), took: time.Since(start)}
}

// serveThreads is the number of threads of the server's process.
func serveThreads(t *testing.T, s *server) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads in /proc/PID/status")
	return 0
}

// sessionMounts are the mounts naming session id, in the server's mount
// namespace and the host's.
func sessionMounts(t *testing.T, s *server, id string) []string {
	t.Helper()
	var out []string
	for _, f := range []string{fmt.Sprintf("/proc/%d/mountinfo", s.cmd.Process.Pid), "/proc/self/mountinfo"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, id) {
				out = append(out, f+": "+l)
			}
		}
	}
	return out
}

// TestSessionFilesPlanted: 50 PUTs onto FIFOs the sandbox made (through
// files/ and fs/file), a read, a session call's files, a stat and a list
// of a directory holding a FIFO, a write through a symlink out and paths
// too long, each answered at once (400 saying it is not a regular file,
// 404 naming the path, 400 too long); then DELETE, and the server has no
// more threads than before and no mount of the session is left, in its
// mount namespace or the host's. On runc and runsc.
func TestSessionFilesPlanted(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	a := "token-a-0123456789abcdef"
	must(t, os.WriteFile(tokens, []byte(a+"\n"), 0o600))
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			s := startServer(t, "--token-file", tokens)
			code, data := sessionHTTP(t, s, a, "POST", "/v1/sessions", `{"lang":"bash","runtime":"`+rt+`"}`)
			var sess runner.Session
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			base := "/v1/sessions/" + sess.ID
			plant := fmt.Sprintf("cd /workspace && for i in $(seq 0 %d); do mkfifo p$i; done && mkfifo out.txt && mkdir d && mkfifo d/fifo && "+
				"ln -s /etc /workspace/etc-link && ln -s /etc/hostname host && mkfifo /tmp/p /home/user/p && ls -l p0 d/fifo /tmp/p", plantedPuts-1)
			code, data = sessionHTTP(t, s, a, "POST", base+"/runs", fmt.Sprintf(`{"code":%q}`, plant))
			var res result
			if code != 200 || json.Unmarshal(data, &res) != nil || res.ExitCode != 0 || strings.Count(res.Stdout, "prw") != 3 {
				t.Fatalf("planting: %d %s", code, data)
			}
			if mounts := sessionMounts(t, s, sess.ID); len(mounts) == 0 {
				t.Fatalf("no mount names session %s: the count after DELETE would prove nothing", sess.ID)
			}
			q := func(p string) string { return "?path=" + url.QueryEscape(p) }
			// Under runc the FIFOs are the host's; under runsc gVisor keeps
			// a FIFO made inside in its own kernel (its gofer makes none on
			// the host), and the host, seeing nothing there, writes a
			// regular file: nothing to wait on either way.
			fifo := rt == "runc"
			code, data = sessionHTTP(t, s, a, "GET", base+"/fs/stat"+q("/workspace/p0"), "")
			if seen := code == 200 && strings.Contains(string(data), `"type":"other"`); seen != fifo {
				t.Fatalf("stat /workspace/p0 from the host: %d %s, want a FIFO seen: %v", code, data, fifo)
			}
			// As many regular files first, the same way: the server's
			// threads for that many requests at once are there before
			// the count.
			var wg sync.WaitGroup
			warm := make([]answer, plantedPuts)
			for i := range warm {
				wg.Add(1)
				go func() {
					defer wg.Done()
					warm[i] = plantedDo(s, a, "PUT", base+"/files/"+url.PathEscape(fmt.Sprintf("w%d.txt", i)), "x")
				}()
			}
			wg.Wait()
			for i, w := range warm {
				if w.err != nil || w.code != 204 {
					t.Fatalf("PUT w%d.txt: %d %s %v", i, w.code, w.body, w.err)
				}
			}
			threads := serveThreads(t, s)
			// Half through files/ (a path in /workspace), half through
			// fs/file (an absolute path).
			puts := make([]answer, plantedPuts)
			for i := range puts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := base + "/files/" + url.PathEscape(fmt.Sprintf("p%d", i))
					if i%2 == 1 {
						p = base + "/fs/file" + q(fmt.Sprintf("/workspace/p%d", i))
					}
					puts[i] = plantedDo(s, a, "PUT", p, "PWNED")
				}()
			}
			wg.Wait()
			for i, p := range puts {
				want := fmt.Sprintf("/workspace/p%d is a FIFO, not a regular file", i)
				if !fifo {
					if p.err != nil || p.code >= 300 || p.took > prompt {
						t.Errorf("PUT p%d (no FIFO on the host): %d %s %v in %v, want a 2xx at once", i, p.code, p.body, p.err, p.took)
					}
					continue
				}
				if p.err != nil || p.code != 400 || !strings.Contains(p.body, want) || !strings.Contains(p.body, `"field":"path"`) || p.took > prompt {
					t.Errorf("PUT onto FIFO p%d: %d %s %v in %v, want 400 naming path and %q at once", i, p.code, p.body, p.err, p.took, want)
				}
			}
			for _, c := range []struct {
				name, method, path, body string
				code                     int
				want                     string
				// fifo: a FIFO's case, where runsc's host sees none.
				fifo bool
			}{
				{"read a FIFO through files/", "GET", base + "/files/out.txt", "", 400, "/workspace/out.txt is a FIFO, not a regular file", true},
				{"read a FIFO through fs/file", "GET", base + "/fs/file" + q("/tmp/p"), "", 400, "/tmp/p is a FIFO, not a regular file", true},
				{"write a FIFO in the home", "PUT", base + "/fs/file" + q("/home/user/p"), "x", 400, "/home/user/p is a FIFO, not a regular file", true},
				{"a call's file onto a FIFO", "POST", base + "/runs", `{"code":"echo ran","files":{"out.txt":"x"}}`, 400, "/workspace/out.txt is a FIFO, not a regular file", true},
				{"stat a FIFO", "GET", base + "/fs/stat" + q("/workspace/out.txt"), "", 200, `"type":"other"`, true},
				{"list a directory with a FIFO", "GET", base + "/fs/list" + q("/workspace/d"), "", 200, `"path":"/workspace/d/fifo","type":"other"`, true},
				{"write through a symlink out (files/)", "PUT", base + "/files/" + url.PathEscape("etc-link/boxer-planted"), "x", 404, "/workspace/etc-link/boxer-planted: no such file in the session: a symlink on the way leads out", false},
				{"write onto a symlink out (files/)", "PUT", base + "/files/host", "x", 404, "/workspace/host: no such file in the session: a symlink on the way leads out", false},
				{"write through a symlink out (fs/file)", "PUT", base + "/fs/file" + q("/workspace/etc-link/boxer-planted"), "x", 404, "/workspace/etc-link/boxer-planted: no such file in the session", false},
				{"a name too long (files/)", "PUT", base + "/files/" + strings.Repeat("n", 300), "x", 400, "too long", false},
				{"a name too long (fs/file)", "PUT", base + "/fs/file" + q("/tmp/"+strings.Repeat("n", 300)), "x", 400, "too long", false},
				{"a path too long (fs/file)", "PUT", base + "/fs/file" + q("/tmp/"+strings.Repeat("d/", 3000)), "x", 400, "too long: a path takes at most 4096 bytes", false},
				{"a path too long (fs/stat)", "GET", base + "/fs/stat" + q("/tmp/"+strings.Repeat("d/", 3000)), "", 400, "too long", false},
			} {
				r := plantedDo(s, a, c.method, c.path, c.body)
				if c.fifo && !fifo {
					if r.err != nil || r.code >= 500 || r.took > prompt {
						t.Errorf("%s (no FIFO on the host): %d %s %v in %v, want an answer at once", c.name, r.code, r.body, r.err, r.took)
					}
					continue
				}
				if r.err != nil || r.code != c.code || !strings.Contains(r.body, c.want) || r.took > prompt {
					t.Errorf("%s: %d %s %v in %v, want %d and %q at once", c.name, r.code, r.body, r.err, r.took, c.code, c.want)
				}
				if r.code >= 400 && (!strings.Contains(r.body, `"field":"`) || len(r.body) > 1000 || strings.Contains(r.body, "escapes from parent")) {
					t.Errorf("%s: %s, want a field named and the path cut", c.name, r.body)
				}
			}
			if _, err := os.Stat("/etc/boxer-planted"); err == nil {
				t.Error("a write through a symlink out made /etc/boxer-planted")
				os.Remove("/etc/boxer-planted")
			}
			// The sandbox's FIFOs are still FIFOs and nothing was written.
			code, data = sessionHTTP(t, s, a, "POST", base+"/runs", `{"code":"stat -c %F p0 p1 out.txt | sort | uniq -c"}`)
			if code != 200 || json.Unmarshal(data, &res) != nil || fifo && strings.TrimSpace(res.Stdout) != "3 fifo" {
				t.Errorf("after the PUTs: %d %s", code, data)
			}
			start := time.Now()
			if r := plantedDo(s, a, "DELETE", base, ""); r.err != nil || r.code != 204 {
				t.Fatalf("delete: %d %s %v", r.code, r.body, r.err)
			}
			t.Logf("%s: %d PUTs onto FIFOs, the slowest %v; delete %v", rt, plantedPuts, slowest(puts), time.Since(start))
			// Threads do not end at once: poll a little.
			deadline := time.Now().Add(10 * time.Second)
			for {
				after := serveThreads(t, s)
				mounts := sessionMounts(t, s, sess.ID)
				// A few threads of slack: the runtime's own come and go.
				if after <= threads+4 && len(mounts) == 0 {
					t.Logf("threads: %d before the FIFOs, %d after DELETE", threads, after)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after DELETE: %d threads (%d before the PUTs onto FIFOs), session mounts %q", after, threads, mounts)
				}
				time.Sleep(100 * time.Millisecond)
			}
			s.stop(t)
		})
	}
	assertClean(t)
}

// slowest is the longest of answers' times.
func slowest(answers []answer) time.Duration {
	var m time.Duration
	for _, a := range answers {
		m = max(m, a.took)
	}
	return m
}

// TestE2BFilesPlanted: envd's files.write and files.read onto a FIFO the
// sandbox made, and a name too long, answer at once with the SDK's error
// for a bad request naming the path; a write through a symlink out is
// FileNotFoundError; getInfo still describes the FIFO. On runc and runsc
// (where gVisor keeps the FIFO from the host, and a write makes a file).
func TestE2BFilesPlanted(t *testing.T) {
	const script = `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create()
await sbx.commands.run('mkfifo /home/user/p && mkdir /home/user/d && mkfifo /home/user/d/f && ln -s /etc /home/user/etc-link')
const start = Date.now()
for (const [name, f] of [
  ['write', () => sbx.files.write('/home/user/p', 'PWNED')],
  ['write many', () => Promise.all(Array.from({ length: 20 }, () => sbx.files.write('/home/user/d/f', 'PWNED')))],
  ['read', () => sbx.files.read('/home/user/p')],
  ['write long', () => sbx.files.write('/home/user/' + 'n'.repeat(300), 'x')],
  ['stat long', () => sbx.files.getInfo('/home/user/' + 'd/'.repeat(3000))],
  ['write out', () => sbx.files.write('/home/user/etc-link/boxer-planted', 'x')],
]) {
  try {
    await f()
    console.log(name, 'succeeded')
  } catch (e) {
    const m = e.message
    console.log(name, e.name, m.includes('/home/user/') && (m.includes('not a regular file') || m.includes('too long') || m.includes('leads out')), m.length < 1000)
  }
}
const info = await sbx.files.getInfo('/home/user/p')
console.log('info', info.name, info.type ?? 'none')
console.log("list:" + (await sbx.files.list("/home/user/d")).map((e) => e.name).join(","))
console.log('prompt', Date.now() - start < 10000)
console.log('fifo', (await sbx.commands.run('stat -c %F /home/user/p /home/user/d/f')).stdout.trim().split('\n').join(','))
await sbx.kill()
`
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], script))
			// Under runsc gVisor keeps the FIFOs (the host sees none): the
			// writes make regular files, and the sandbox sees those.
			want := []string{
				"write succeeded",
				"write many succeeded",
				"read succeeded",
				"write long InvalidArgumentError true true",
				"stat long InvalidArgumentError true true",
				"write out FileNotFoundError true true",
				"info p file",
				"list:f",
				"prompt true",
				"fifo regular file,regular file",
			}
			if rt == "runc" {
				want[0], want[1], want[2] = "write InvalidArgumentError true true", "write many InvalidArgumentError true true", "read InvalidArgumentError true true"
				// The SDK leaves out an entry of a type it does not know.
				want[6], want[7], want[9] = "info p none", "list:", "fifo fifo,fifo"
			}
			checkLines(t, "planted", out, want)
			e.stop(t)
		})
	}
	assertClean(t)
}
