package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/leases"
)

// server is a 'boxer serve' process of a test.
type server struct {
	url   string
	cmd   *exec.Cmd
	audit string
	log   *bytes.Buffer
	// client checks every call against the OpenAPI document.
	client *http.Client
}

// startServer runs boxer serve with flags and waits until /healthz answers;
// the test's cleanup stops it by PID.
func startServer(t *testing.T, flags ...string) *server {
	t.Helper()
	return startServerAt(t, namespace, fmt.Sprintf("127.0.0.1:%d", freePort(t)), flags...)
}

// startServerAt is startServer in containerd namespace ns, listening on
// addr.
func startServerAt(t *testing.T, ns, addr string, flags ...string) *server {
	t.Helper()
	s := &server{url: "http://" + addr, audit: filepath.Join(t.TempDir(), "audit.jsonl"), log: &bytes.Buffer{}}
	s.client = apiClient(t, s.url)
	args := append([]string{"--namespace", ns, "serve", "--listen", addr, "--audit-log", s.audit}, flags...)
	s.cmd = exec.Command(boxerBin, args...)
	s.cmd.Env = testEnv
	if fakeNet != nil {
		s.cmd.Env = append(append([]string{}, testEnv...), egressEnv(fakeNet)...)
	}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	must(t, s.cmd.Start())
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			// SIGINT: a stop that ends the sessions (SIGTERM hands
			// them over to a next server).
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			_ = s.cmd.Wait()
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := s.client.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not answer: %s", s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// post sends body to POST /v1/runs with header's name and value pairs.
func (s *server) post(t *testing.T, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/v1/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return s.send(t, req, header...)
}

// postInvalid is post of a body the OpenAPI document refuses too, to test
// the server's 4xx: sent without request validation.
func (s *server) postInvalid(t *testing.T, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/v1/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return s.send(t, invalidRequest(req), header...)
}

func (s *server) send(t *testing.T, req *http.Request, header ...string) (int, http.Header, []byte) {
	t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// Errorf, not Fatalf: post runs in goroutines too.
		t.Errorf("POST: %v", err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// stop ends the server with SIGINT and waits: its sessions end and its
// pre-created sandboxes are removed as it exits, so assertClean may
// follow (SIGTERM would leave its sessions to a next server).
func (s *server) stop(t *testing.T) {
	t.Helper()
	if s.cmd.ProcessState != nil {
		return
	}
	must(t, s.cmd.Process.Signal(syscall.SIGINT))
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v: %s", err, s.log)
	}
}

func (s *server) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(s.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestServeRunsAndRejects(t *testing.T) {
	s := startServer(t, "--max-memory", "512m", "--max-body", "64KiB")
	code, _, body := s.post(t, `{"lang":"python","code":"import sys\nprint(open('data/in.txt').read(), sys.stdin.read())","files":{"data/in.txt":"hello"},"stdin":"world","timeout":"10s"}`)
	var res result
	if code != 200 || json.Unmarshal(body, &res) != nil || res.Stdout != "hello world\n" || res.Status != "exited" {
		t.Fatalf("run: %d %s", code, body)
	}
	// invalid: the OpenAPI document refuses the body too.
	tests := []struct {
		name, body string
		invalid    bool
		code       int
		field      string
	}{
		{"unknown field", `{"lang":"python","cod":"x"}`, true, 400, "cod"},
		{"wrong type", `{"lang":"python","code":"1","pids":"many"}`, true, 400, "pids"},
		{"above max", `{"lang":"python","code":"1","memory":"1g"}`, false, 400, "memory"},
		{"bad size", `{"lang":"python","code":"1","tmp_size":"huge"}`, false, 400, "tmp_size"},
		{"bad lang", `{"lang":"cobol","code":"1"}`, true, 400, "lang"},
		{"zero cpus", `{"lang":"python","code":"1","cpus":0}`, false, 400, "cpus"},
		{"nothing", `{}`, false, 400, "lang"},
		{"not json", `lang=python`, true, 400, "body"},
		{"escaping file", `{"lang":"python","code":"1","files":{"../x":"y"}}`, false, 400, "files"},
		{"missing image", `{"image":"no/such:image","command":["true"]}`, false, 400, "image"},
		{"too big", `{"lang":"python","code":"` + strings.Repeat("x", 70<<10) + `"}`, false, 413, "body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			post := s.post
			if tc.invalid {
				post = s.postInvalid
			}
			code, _, body := post(t, tc.body)
			var e struct{ Field, Error string }
			if code != tc.code || json.Unmarshal(body, &e) != nil || (e.Field != tc.field && tc.field != "body") || e.Error == "" {
				t.Errorf("%d %s, want %d naming %q", code, body, tc.code, tc.field)
			}
		})
	}
	// Metrics: the runs and the rejections are counted.
	resp, err := s.client.Get(s.url + "/metrics")
	must(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`boxer_runs_total{lang="python",status="exited"} 1`, `boxer_requests_rejected_total{code="413"} 1`, "boxer_run_duration_seconds_bucket", "boxer_queue_wait_seconds_bucket", "boxer_runs_in_flight 0", "boxer_queue_depth 0"} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The audit log: one line per request, the code's hash, never the code.
	lines := s.auditLines(t)
	if len(lines) != 1+len(tests) {
		t.Errorf("%d audit lines for %d requests", len(lines), 1+len(tests))
	}
	if lines[0]["status"] != "exited" || lines[0]["code_sha256"] == nil || lines[0]["id"] != res.ID {
		t.Errorf("first audit line %v", lines[0])
	}
	data, _ := os.ReadFile(s.audit)
	if bytes.Contains(data, []byte("print(open")) || bytes.Contains(data, []byte("hello world")) {
		t.Error("the audit log holds code or output")
	}
	s.stop(t)
	assertClean(t)
}

func TestServeAuth(t *testing.T) {
	// Without a token, a non-loopback address is refused.
	r := boxer(t, nil, "serve", "--listen", "0.0.0.0:0")
	if r.code != 125 || !strings.Contains(r.stderr, "without --token-file") {
		t.Errorf("non-loopback without token: exit %d %q", r.code, r.stderr)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(tokenFile, []byte("s3cret-token-of-some-length\n"), 0o600))
	s := startServer(t, "--token-file", tokenFile)
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret-token-of-some-length"}} {
		if code, _, body := s.post(t, `{"lang":"python","code":"print(1)"}`, h...); code != 401 || !strings.Contains(string(body), "authorization") {
			t.Errorf("header %v: %d %s", h, code, body)
		}
	}
	if code, _, body := s.post(t, `{"lang":"python","code":"print(1)"}`, "Authorization", "Bearer s3cret-token-of-some-length"); code != 200 {
		t.Errorf("right token: %d %s", code, body)
	}
	// Five lines: startServer's own /healthz probe (no token: 401 too),
	// three refusals and the run.
	lines := s.auditLines(t)
	if len(lines) != 5 || lines[1]["http_status"] != float64(401) || lines[4]["status"] != "exited" {
		t.Errorf("audit lines %v", lines)
	}
	if data, _ := os.ReadFile(s.audit); bytes.Contains(data, []byte("s3cret")) {
		t.Error("the audit log holds the token")
	}
	s.stop(t)
	assertClean(t)
}

func TestServeQueueFull(t *testing.T) {
	s := startServer(t, "--concurrency", "1", "--queue", "1")
	slow := `{"lang":"python","code":"import time; time.sleep(3)"}`
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i], _, _ = s.post(t, slow)
		}(i)
		time.Sleep(300 * time.Millisecond)
	}
	// One runs, one waits: a third is refused at once.
	start := time.Now()
	code, hdr, body := s.post(t, slow)
	if code != 429 || hdr.Get("Retry-After") == "" || time.Since(start) > time.Second {
		t.Errorf("third request: %d %q %s after %s", code, hdr.Get("Retry-After"), body, time.Since(start))
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("queued requests: %v", codes)
	}
	s.stop(t)
	assertClean(t)
}

func TestServeClientGoneCancelsRun(t *testing.T) {
	// No pre-created sandboxes: the test watches the run's own go away.
	s := startServer(t, "--warm", "")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/runs", strings.NewReader(`{"lang":"python","code":"import time; time.sleep(60)"}`))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := s.client.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitForTask(t)
	cancel()
	<-done
	// The sandbox goes within moments, not after 60 s.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, err := runTasks(context.Background())
		if err == nil && len(tasks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sandbox still there after the client left")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop(t)
	assertClean(t)
}

func TestServeGracefulShutdown(t *testing.T) {
	// A run shorter than the grace period finishes and is answered.
	s := startServer(t, "--shutdown-grace", "10s", "--warm", "")
	got := make(chan int, 1)
	go func() {
		code, _, _ := s.post(t, `{"lang":"python","code":"import time; time.sleep(2); print('done')"}`)
		got <- code
	}()
	waitForTask(t)
	must(t, s.cmd.Process.Signal(syscall.SIGTERM))
	if code := <-got; code != 200 {
		t.Errorf("run in flight at SIGTERM: %d", code)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v: %s", err, s.log)
	}
	// A run longer than the grace period is killed, cleaned up, and the
	// server still exits 0.
	s = startServer(t, "--shutdown-grace", "1s", "--warm", "")
	killed := make(chan string, 1)
	go func() {
		code, _, body := s.post(t, `{"lang":"python","code":"import time; time.sleep(60)"}`)
		killed <- fmt.Sprintf("%d %s", code, body)
	}()
	waitForTask(t)
	start := time.Now()
	must(t, s.cmd.Process.Signal(syscall.SIGTERM))
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v: %s", err, s.log)
	}
	if got := <-killed; !strings.HasPrefix(got, "503 ") || !strings.Contains(got, `"status":"killed"`) {
		t.Errorf("run killed at the end of the grace period was answered %s, want 503 and status killed", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %s with a 1s grace", d)
	}
	assertClean(t)
}

// TestServeLoad sends 500 requests from 8 clients on loopback, with room for
// 2 running and 4 waiting: every one is answered 2xx or 429 (a client told
// 429 waits a little, as Retry-After asks), every 2xx result is right, and
// nothing is left.
func TestServeLoad(t *testing.T) {
	s := startServer(t, "--concurrency", "2", "--queue", "4")
	const total, clients = 500, 8
	var next, ok, busy atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > total {
					return
				}
				code, _, body := s.post(t, fmt.Sprintf(`{"lang":"python","code":"print(%d * 2)"}`, i))
				var res result
				switch {
				case code == 200 && json.Unmarshal(body, &res) == nil && res.Stdout == fmt.Sprintf("%d\n", i*2):
					ok.Add(1)
				case code == 429:
					busy.Add(1)
					time.Sleep(250 * time.Millisecond)
				default:
					t.Errorf("request %d: %d %s", i, code, body)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d ok, %d 429 of %d", ok.Load(), busy.Load(), total)
	if ok.Load()+busy.Load() != total {
		t.Errorf("%d answered of %d", ok.Load()+busy.Load(), total)
	}
	// Some of each: how many run is the bench's concern (beside
	// stress-ng --cpu 2, 80 of 500 ran).
	if ok.Load() < 20 || busy.Load() == 0 {
		t.Errorf("%d ran and %d were refused: want at least 20 runs and some 429s", ok.Load(), busy.Load())
	}
	s.stop(t)
	assertClean(t)
}

// waitForTask waits until a sandbox's task is there (an anchor's does not
// count: see runTasks).
func waitForTask(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tasks, err := runTasks(context.Background())
		if err == nil && len(tasks) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no sandbox started")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForRunningTask waits until a task runs its program.
func waitForRunningTask(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		tasks, err := client.TaskService().List(context.Background(), nil)
		if err == nil && slices.ContainsFunc(tasks.Tasks, func(tk *task.Process) bool { return tk.Status == task.Status_RUNNING }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no sandbox runs")
		}
	}
}

// TestServeWarmSandboxes checks the pre-created sandboxes of 'boxer serve':
// requests take them, and a warm sandbox is as fresh as a cold one (nothing
// of an earlier request, its own PID namespace, /tmp and /workspace).
func TestServeWarmSandboxes(t *testing.T) {
	s := startServer(t, "--warm", "python", "--warm-size", "1", "--concurrency", "1")
	code := `
import os
seen = sorted(os.listdir("/tmp")) + sorted(os.listdir("/workspace"))
open("/tmp/left-by-me", "w").write("x")
open("/workspace/left-by-me", "w").write("x")
print(seen, os.getppid(), len([p for p in os.listdir("/proc") if p.isdigit()]), os.getuid())
`
	for i := 0; i < 3; i++ {
		body, _ := json.Marshal(map[string]any{"lang": "python", "code": code, "files": map[string]string{"mine.txt": "x"}})
		status, _, resp := s.post(t, string(body))
		var res result
		if status != 200 || json.Unmarshal(resp, &res) != nil {
			t.Fatalf("request %d: %d %s", i, status, resp)
		}
		if res.Stdout != "['mine.txt'] 1 2 65534\n" {
			t.Errorf("request %d saw %q, want only its own file, a child of PID 1 (boxer-init), two processes", i, res.Stdout)
		}
		time.Sleep(300 * time.Millisecond) // let the pool refill
	}
	sameAsCold(t, s, "runc")

	resp, err := s.client.Get(s.url + "/metrics")
	must(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(metrics, []byte("boxer_warm_runs_total 0\n")) || !bytes.Contains(metrics, []byte("boxer_warm_runs_total")) {
		t.Errorf("no run took a warm sandbox:\n%s", grepLines(metrics, "boxer_warm"))
	}
	must(t, s.cmd.Process.Signal(syscall.SIGTERM))
	_ = s.cmd.Wait()
	assertClean(t)
}

// TestServeKilledPoolReaped kills the server with SIGKILL (no cleanup can
// run) and checks that its pre-created sandboxes are reaped by the next
// boxer call. The server is killed at several moments after its first
// sandbox exists, so that some kills land while it is creating the next:
// containerd 2.x then loses that sandbox's shim, container or cgroups, and
// only boxer's sweep removes them.
func TestServeKilledPoolReaped(t *testing.T) {
	for _, warm := range []string{"python", "python:runsc"} {
		t.Run(warm, func(t *testing.T) { killPoolServer(t, warm) })
	}
}

func killPoolServer(t *testing.T, warm string) {
	for i := range 8 {
		s := startServer(t, "--warm", warm, "--warm-size", "2")
		waitForTask(t)
		time.Sleep(time.Duration(i) * 15 * time.Millisecond)
		must(t, s.cmd.Process.Kill())
		_ = s.cmd.Wait()
		ctrs, err := client.Containers(context.Background())
		if err != nil || len(ctrs) == 0 {
			t.Fatalf("want the killed server's sandboxes left behind: %d, %v", len(ctrs), err)
		}
		// The next command that makes a sandbox reaps them.
		if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
			t.Fatalf("run: %s", r.stderr)
		}
		assertClean(t)
		if t.Failed() {
			t.Fatalf("left behind after a kill %d ms after the first sandbox", i*15)
		}
	}
}

// sameAsCold compares what a program sees of its own process in a warm and
// in a cold sandbox on runtime (a memory limit other than the default never
// takes a warm one): the same argv, environment, parent, descriptors,
// credentials and input.
func sameAsCold(t *testing.T, s *server, runtime string) {
	t.Helper()
	// Not the program's PID: the first boxer-init makes, after the PIDs
	// of the runtime's own threads (runc init's, as many as its Go
	// runtime started), which vary from one cold run to the next.
	probe := `
import os, sys
st = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/self/status")}
print(open("/proc/self/cmdline").read().split("\\0"), sorted(os.environ.items()), os.getppid(),
      sorted(os.listdir("/proc/self/fd")), os.getcwd(), [st.get(k) for k in ("Uid", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Threads")],
      len([p for p in os.listdir("/proc") if p.isdigit()]), repr(sys.stdin.read()))
`
	seen := map[bool]string{}
	for _, warm := range []bool{true, false} {
		req := map[string]any{"lang": "python", "code": probe, "stdin": "line one\nline two", "runtime": runtime}
		if !warm {
			req["memory"] = "200m"
		}
		body, _ := json.Marshal(req)
		// The pool refills in its own time (a gVisor sandbox takes
		// seconds on a loaded host): a warm probe that found it empty
		// ran cold, and is tried again.
		for deadline := time.Now().Add(30 * time.Second); ; {
			time.Sleep(time.Second)
			before := warmRuns(t, s)
			status, _, resp := s.post(t, string(body))
			var res result
			if status != 200 || json.Unmarshal(resp, &res) != nil || res.ExitCode != 0 {
				t.Fatalf("probe (warm %v): %d %s", warm, status, resp)
			}
			took := warmRuns(t, s) > before
			if took == warm {
				seen[warm] = res.Stdout
				break
			}
			if !warm || time.Now().After(deadline) {
				t.Fatalf("probe (warm %v) took a warm sandbox: %v", warm, took)
			}
		}
	}
	if seen[true] != seen[false] || !strings.Contains(seen[true], "'line one\\nline two'") {
		t.Errorf("a warm sandbox on %s differs from a cold one:\nwarm %s\ncold %s", runtime, seen[true], seen[false])
	}
}

// TestServeWarmRunsc checks warm sandboxes on gVisor: taken, and as fresh
// as cold ones.
func TestServeWarmRunsc(t *testing.T) {
	s := startServer(t, "--warm", "python:runsc", "--warm-size", "1", "--concurrency", "1")
	sameAsCold(t, s, "runsc")
	must(t, s.cmd.Process.Signal(syscall.SIGTERM))
	_ = s.cmd.Wait()
	assertClean(t)
}

// warmRuns reads boxer_warm_runs_total from the server's metrics.
func warmRuns(t *testing.T, s *server) int {
	t.Helper()
	resp, err := s.client.Get(s.url + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	var n int
	for _, l := range strings.Split(string(metrics), "\n") {
		if _, err := fmt.Sscanf(l, "boxer_warm_runs_total %d", &n); err == nil {
			return n
		}
	}
	t.Fatalf("no boxer_warm_runs_total in the metrics")
	return 0
}

func grepLines(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServeContainerLease: a server makes its containers under one lease
// of its own (two fewer writes of containerd's database per sandbox),
// which goes with it; a CLI run makes none.
func TestServeContainerLease(t *testing.T) {
	containerLeases := func() []leases.Lease {
		t.Helper()
		held, err := client.LeasesService().List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ours []leases.Lease
		for _, l := range held {
			if strings.HasPrefix(l.ID, reaper.ContainerLeasePrefix) {
				ours = append(ours, l)
			}
		}
		return ours
	}
	s := startServer(t, "--warm", "python", "--warm-size", "2")
	for range 3 {
		if code, _, body := s.post(t, `{"lang":"python","code":"print(1)"}`); code != 200 {
			t.Fatalf("POST /v1/runs: %d %s", code, body)
		}
	}
	held := containerLeases()
	if len(held) != 1 || !reaper.Alive(held[0].Labels[reaper.LabelOwner]) {
		t.Errorf("the server's container leases: %+v, want one, its owner alive", held)
	}
	s.stop(t)
	if held := containerLeases(); len(held) != 0 {
		t.Errorf("container leases after the server stopped: %+v", held)
	}
	if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	if held := containerLeases(); len(held) != 0 {
		t.Errorf("a CLI run's container leases: %+v", held)
	}
	assertClean(t)
}
