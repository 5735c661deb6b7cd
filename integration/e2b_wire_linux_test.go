package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// E2B's wire against a hostile caller: every body and message within
// --max-body, refused early and by name; no answer echoes a request whole;
// a sandbox's ports get none of the caller's credentials.

// e2bCreate makes a sandbox through the control plane with key and returns
// its ID and envd access token.
func (e *e2bServer) e2bCreate(t *testing.T, key, body string) (id, token string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.api+"/v2/sandboxes", strings.NewReader(body))
	req.Header.Set("X-API-KEY", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var sb struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sb); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating a sandbox: %d %v\n%s", resp.StatusCode, err, e.log)
	}
	return sb.SandboxID, sb.EnvdAccessToken
}

// e2bAnswer is one answer of the E2B listener: its status, body, how
// long it took, or the error of a request the server cut short.
type e2bAnswer struct {
	code int
	body string
	took time.Duration
	err  error
}

// data sends a data-plane request to port of sandbox id with its token.
func (e *e2bServer) data(id, token string, port int, method, path, ctype string, body io.Reader) e2bAnswer {
	req, _ := http.NewRequest(method, e.api+path, body)
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(port))
	req.Header.Set("X-Access-Token", token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return e.do(req)
}

func (e *e2bServer) do(req *http.Request) e2bAnswer {
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return e2bAnswer{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return e2bAnswer{code: resp.StatusCode, body: string(b), took: time.Since(start)}
}

// filler is n bytes of 'a', made as they are read: a huge body that costs
// the test no memory.
type filler struct{ n int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.n)
	for i := range n {
		p[i] = 'a'
	}
	f.n -= n
	return int(n), nil
}

// statBody is a Connect JSON Stat request of a path /workspace/ and n
// bytes, streamed.
func statBody(n int64) io.Reader {
	return io.MultiReader(strings.NewReader(`{"path":"/workspace/`), &filler{n}, strings.NewReader(`"}`))
}

// vmHWM is a process's peak resident memory in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	must(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// maxAnswer is the most an error answer may take: a message, its field
// and a path's prefix, never the request.
const maxAnswer = 2048

func TestE2BWireSizes(t *testing.T) {
	const maxBody = 1 << 20
	e := startE2B(t)
	id, token := e.e2bCreate(t, e.keys[0], `{"templateID":"base"}`)
	pid := e.cmd.Process.Pid
	before := vmHWM(t, pid)

	// A 256 MiB Stat, streamed: refused before it is read whole.
	a := e.data(id, token, 49983, "POST", "/filesystem.Filesystem/Stat", "application/json", statBody(256<<20))
	t.Logf("256 MiB Stat: %d in %v (%v): %.200s", a.code, a.took, a.err, a.body)
	if a.err == nil && (a.code != http.StatusTooManyRequests || !strings.Contains(a.body, "resource_exhausted") || !strings.Contains(a.body, strconv.Itoa(maxBody)) || len(a.body) > maxAnswer) {
		t.Errorf("256 MiB Stat: %d %.300s (%d bytes), want 429 resource_exhausted naming %d, short", a.code, a.body, len(a.body), maxBody)
	}
	if a.took > 20*time.Second {
		t.Errorf("256 MiB Stat took %v: it was read, not refused", a.took)
	}
	if grew := vmHWM(t, pid) - before; grew > 64<<20 {
		t.Errorf("serve's peak memory grew by %d MiB on a 256 MiB Stat, want under 64", grew>>20)
	}

	tests := []struct {
		name      string
		port      int
		method    string
		path      string
		ctype     string
		body      func() io.Reader
		code      int
		contains  []string
		transport bool // true: a data-plane request, else the control plane
	}{
		{name: "Stat just over the cap", port: 49983, method: "POST", path: "/filesystem.Filesystem/Stat", ctype: "application/json",
			body: func() io.Reader { return statBody(maxBody + 1024) }, code: http.StatusTooManyRequests, contains: []string{"resource_exhausted", strconv.Itoa(maxBody)}, transport: true},
		{name: "Stat of a long path under the cap", port: 49983, method: "POST", path: "/filesystem.Filesystem/Stat", ctype: "application/json",
			body: func() io.Reader { return statBody(maxBody - 1024) }, code: http.StatusBadRequest, contains: []string{"invalid_argument", "aaaa", "bytes)", "too long"}, transport: true},
		{name: "Stat of a long path outside", port: 49983, method: "POST", path: "/filesystem.Filesystem/Stat", ctype: "application/json",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"path":"/etc/`), &filler{maxBody - 1024}, strings.NewReader(`"}`))
			}, code: http.StatusForbidden, contains: []string{"permission_denied", "/etc/aaaa"}, transport: true},
		{name: "ListDir over the cap", port: 49983, method: "POST", path: "/filesystem.Filesystem/ListDir", ctype: "application/json",
			body: func() io.Reader { return statBody(4 << 20) }, code: http.StatusTooManyRequests, contains: []string{"resource_exhausted", strconv.Itoa(maxBody)}, transport: true},
		{name: "files read of a long path", port: 49983, method: "GET", path: "/files?path=/workspace/" + strings.Repeat("b", 512<<10),
			body: func() io.Reader { return nil }, code: http.StatusBadRequest, contains: []string{"bbbb", "bytes)", "too long"}, transport: true},
		{name: "execute over the cap", port: 49999, method: "POST", path: "/execute", ctype: "application/json",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"code":"`), &filler{2 << 20}, strings.NewReader(`"}`))
			}, code: http.StatusRequestEntityTooLarge, contains: []string{strconv.Itoa(maxBody), "--max-body"}, transport: true},
		{name: "contexts over the cap", port: 49999, method: "POST", path: "/contexts", ctype: "application/json",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"cwd":"`), &filler{2 << 20}, strings.NewReader(`"}`))
			}, code: http.StatusRequestEntityTooLarge, contains: []string{strconv.Itoa(maxBody), "--max-body"}, transport: true},
		{name: "create over the cap", method: "POST", path: "/v2/sandboxes", ctype: "application/json",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"templateID":"`), &filler{2 << 20}, strings.NewReader(`"}`))
			}, code: http.StatusRequestEntityTooLarge, contains: []string{strconv.Itoa(maxBody), "--max-body"}},
		// An unknown template is 404 (another key's is no different), with
		// the name cut short.
		{name: "create of a long template", method: "POST", path: "/v2/sandboxes", ctype: "application/json",
			body: func() io.Reader {
				return io.MultiReader(strings.NewReader(`{"templateID":"`), &filler{maxBody - 1024}, strings.NewReader(`"}`))
			}, code: http.StatusNotFound, contains: []string{"templateID", "aaaa", "bytes)"}},
		{name: "get of a long ID", method: "GET", path: "/sandboxes/" + strings.Repeat("c", 512<<10),
			body: func() io.Reader { return nil }, code: http.StatusNotFound, contains: []string{"cccc", "bytes)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a e2bAnswer
			if tc.transport {
				a = e.data(id, token, tc.port, tc.method, tc.path, tc.ctype, tc.body())
			} else {
				req, _ := http.NewRequest(tc.method, e.api+tc.path, tc.body())
				req.Header.Set("X-API-KEY", e.keys[0])
				req.Header.Set("Content-Type", tc.ctype)
				a = e.do(req)
			}
			if a.err != nil {
				t.Fatalf("%v (after %v)", a.err, a.took)
			}
			if a.code != tc.code {
				t.Errorf("status = %d, want %d: %.300s", a.code, tc.code, a.body)
			}
			for _, c := range tc.contains {
				if !strings.Contains(a.body, c) {
					t.Errorf("answer %.300s: want it to name %q", a.body, c)
				}
			}
			if len(a.body) > maxAnswer {
				t.Errorf("answer of %d bytes, want at most %d: %.300s…", len(a.body), maxAnswer, a.body)
			}
		})
	}

	// boxer's own API on the same server: a long session ID is not echoed.
	req, _ := http.NewRequest("GET", e.url+"/v1/sessions/"+strings.Repeat("d", 512<<10)+"/files/x", nil)
	if a := e.do(req); a.err != nil || a.code/100 != 4 || len(a.body) > maxAnswer {
		t.Errorf("boxer's API, a long session ID: %d %v, %d bytes: %.300s", a.code, a.err, len(a.body), a.body)
	}
	if grew := vmHWM(t, pid) - before; grew > 64<<20 {
		t.Errorf("serve's peak memory grew by %d MiB, want under 64", grew>>20)
	}
	e.stop(t)
	assertClean(t)
}

// e2bHeadersScript starts a server in the sandbox that answers with the
// names of the headers it received, and calls it through boxer's port
// proxy with every credential a caller holds.
const e2bHeadersScript = `
import { Sandbox } from 'e2b'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const sbx = await Sandbox.create()
await sbx.files.write('/tmp/headers.py', [
	'import http.server, json',
	'class H(http.server.BaseHTTPRequestHandler):',
	'    def do_GET(self):',
	'        b = json.dumps(sorted(k.lower() for k in self.headers.keys())).encode()',
	'        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)',
	'    def log_message(self, *a): pass',
	'http.server.HTTPServer(("0.0.0.0", 8000), H).serve_forever()',
].join('\n'))
const server = await sbx.commands.run('python3 /tmp/headers.py', { background: true })
const headers = {
	'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000',
	'E2b-Traffic-Access-Token': sbx.trafficAccessToken,
	'X-Access-Token': 'not-the-envd-token',
	'Authorization': 'Bearer ' + process.env.E2B_API_KEY,
	'X-API-Key': process.env.E2B_API_KEY,
	'Proxy-Authorization': 'Basic eDp5',
	'X-Kept': 'yes',
}
let res
for (let i = 0; i < 100; i++) {
	res = await fetch(process.env.E2B_SANDBOX_URL + '/h', { headers })
	if (res.status === 200) break
	await sleep(100)
}
console.log('status', res.status)
console.log('received', (await res.json()).join(','))
await server.kill()
await sbx.kill()
`

func TestE2BPortHeaders(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], e2bHeadersScript))
			if len(out) != 2 || out[0] != "status 200" {
				t.Fatalf("the sandbox's server did not answer through the proxy:\n%s", strings.Join(out, "\n"))
			}
			got := strings.Split(strings.TrimPrefix(out[1], "received "), ",")
			for _, h := range []string{"authorization", "x-api-key", "x-access-token", "e2b-traffic-access-token", "proxy-authorization", "e2b-sandbox-id", "e2b-sandbox-port"} {
				if slices.Contains(got, h) {
					t.Errorf("the sandbox received %s: %v", h, got)
				}
			}
			if !slices.Contains(got, "x-kept") {
				t.Errorf("the sandbox did not receive the caller's own header X-Kept: %v", got)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// e2bFileErrorsScript asks envd, through the SDK, for what the caller
// gets wrong: a name longer than the file system takes, a link out; each
// answered with the path, as the caller's error. (FIFOs planted by the
// sandbox are refused by runner's file operations, tested there.)
const e2bFileErrorsScript = `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create()
const long = '/workspace/' + 'n'.repeat(300)
const tryIt = async (what, f) => {
	try { await f(); console.log(what, 'ok') } catch (e) { console.log(what, e.name, e.message.includes('nnnnnnnn') || e.message.includes('/workspace/out'), e.message.length < 2048) }
}
await tryIt('write long', () => sbx.files.write(long, 'x'))
await tryIt('getInfo long', () => sbx.files.getInfo(long))
await tryIt('makeDir long', () => sbx.files.makeDir(long))
await sbx.commands.run('ln -s /etc/passwd /workspace/out')
await tryIt('write link out', () => sbx.files.write('/workspace/out', 'x'))
await sbx.kill()
`

func TestE2BFileErrors(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], e2bFileErrorsScript))
			checkLines(t, "file errors", out, []string{
				"write long InvalidArgumentError true true",
				"getInfo long InvalidArgumentError true true",
				"makeDir long InvalidArgumentError true true",
				"write link out FileNotFoundError true true",
			})
			e.stop(t)
			assertClean(t)
		})
	}
}
