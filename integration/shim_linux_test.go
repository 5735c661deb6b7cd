package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/containerd/containerd/api/types/task"
)

// shimDaemons lists the PIDs of this test run's shim daemons: the shims'
// long-running servers (parent init: they double-fork), not a "start" or
// "delete" on its way.
func shimDaemons() []int {
	var pids []int
	for _, p := range processesMatching(stateDir) {
		f := strings.Fields(p)
		if last := f[len(f)-1]; last == "start" || last == "delete" {
			continue
		}
		if pid, _ := strconv.Atoi(f[0]); parentPID(pid) == 1 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// watchShims records every shim daemon seen until the function it returns
// is called, which returns them. A shim lives at least as long as the task
// it serves: the runs watched here last long enough to be seen.
func watchShims() func() map[int]bool {
	seen := map[int]bool{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, pid := range shimDaemons() {
				seen[pid] = true
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() map[int]bool {
		close(stop)
		<-done
		return seen
	}
}

// TestServeSharedShims: with --shared-shims K, a server's runc runs start
// no shim of their own: over 20 runs the shims seen are the K anchors'
// (with 0, one a run). The runs are members of the anchors (their task
// bundles name them), each still its own sandbox.
func TestServeSharedShims(t *testing.T) {
	const runs = 20
	tests := []struct {
		name    string
		k       int
		atLeast int // shims seen
		atMost  int
	}{
		{name: "shared", k: 2, atLeast: 2, atMost: 2},
		{name: "off", k: 0, atLeast: runs / 2, atMost: runs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, "--warm", "", "--concurrency", "2", "--shared-shims", strconv.Itoa(tc.k))
			seen := watchShims()
			members := map[string]bool{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for c := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := c; i < runs; i += 2 {
						// 0.3 s: long enough for every shim to be seen.
						code, _, body := s.post(t, fmt.Sprintf(`{"lang":"python","code":"import time, os; time.sleep(0.3); print(%d, len([p for p in os.listdir('/proc') if p.isdigit()]))"}`, i))
						var res result
						// Two processes: boxer-init and the program.
						if code != 200 || json.Unmarshal(body, &res) != nil || res.Stdout != fmt.Sprintf("%d 2\n", i) {
							t.Errorf("run %d: %d %s", i, code, body)
						}
						mu.Lock()
						for _, id := range bundleSandboxes() {
							members[id] = true
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			pids := seen()
			got := len(pids)
			// The shims are boxer's build (beside the test's boxer),
			// with its collector's target.
			alive := 0
			for pid := range pids {
				exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
				if err != nil {
					continue // gone: a run's own shim
				}
				alive++
				if exe != filepath.Join(filepath.Dir(boxerBin), runner.ShimName) {
					t.Errorf("shim daemon %d runs %s, want boxer's %s", pid, exe, runner.ShimName)
				}
			}
			if tc.k > 0 && alive != tc.k {
				t.Errorf("%d shared shims alive while the server runs, want %d", alive, tc.k)
			}
			if got < tc.atLeast || got > tc.atMost {
				t.Errorf("%d shim daemons over %d runs with --shared-shims %d, want %d to %d", got, runs, tc.k, tc.atLeast, tc.atMost)
			}
			recs, err := client.SandboxStore().List(context.Background())
			if err != nil || len(recs) != tc.k {
				t.Errorf("%d sandbox records while the server runs (%v), want %d", len(recs), err, tc.k)
			}
			if tc.k > 0 && len(members) == 0 {
				t.Error("no run's task bundle names a sandbox: the runs did not join an anchor")
			}
			if tc.k == 0 && len(members) > 0 {
				t.Errorf("runs joined %v with --shared-shims 0", members)
			}
			if n := metric(t, s, "boxer_shared_shim_runs_total"); (n >= runs) != (tc.k > 0) {
				t.Errorf("boxer_shared_shim_runs_total = %d after %d runs with --shared-shims %d", n, runs, tc.k)
			}
			s.stop(t)
			assertClean(t)
		})
	}
}

// TestServeSharedShimRecycled: a shared shim serves --shim-runs sandboxes,
// then a new one takes its place and the old one goes: the shims alive stay
// at K, the shims seen grow with the runs.
func TestServeSharedShimRecycled(t *testing.T) {
	s := startServer(t, "--warm", "", "--concurrency", "1", "--shared-shims", "1", "--shim-runs", "3")
	seen := watchShims()
	for i := range 9 {
		if code, _, body := s.post(t, `{"lang":"python","code":"import time; time.sleep(0.2); print(1)"}`); code != 200 {
			t.Fatalf("run %d: %d %s", i, code, body)
		}
	}
	if got := len(seen()); got < 3 {
		t.Errorf("%d shims seen over 9 runs of 3 a shim, want at least 3", got)
	}
	// The retired ones go once their last run is removed.
	deadline := time.Now().Add(10 * time.Second)
	for len(shimDaemons()) > 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := shimDaemons(); len(got) > 1 {
		t.Errorf("%d shims alive after recycling, want at most 1: %v", len(got), got)
	}
	s.stop(t)
	assertClean(t)
}

// TestServeSharedShimKilled kills a shared shim with SIGKILL while two runs
// use it: both are answered at once with an error result that says so, the
// next run gets a new shim and succeeds, and nothing is left.
func TestServeSharedShimKilled(t *testing.T) {
	s := startServer(t, "--warm", "", "--concurrency", "2", "--shared-shims", "1")
	type answer struct {
		code int
		res  result
		at   time.Time
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			code, _, body := s.post(t, `{"lang":"python","code":"import time; time.sleep(60)"}`)
			var res result
			_ = json.Unmarshal(body, &res)
			answers <- answer{code, res, time.Now()}
		}()
	}
	// Running, not only created: a shim killed while a task is being
	// created on it is no run's loss (the runner creates the task again on
	// a new shim).
	deadline := time.Now().Add(15 * time.Second)
	for runningMembers() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the runs did not start on the shared shim: %v", bundleSandboxes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	shims := shimDaemons()
	if len(shims) != 1 {
		t.Fatalf("%d shims for two runs with --shared-shims 1, want 1: %v", len(shims), processesMatching(stateDir))
	}
	killed := time.Now()
	must(t, syscall.Kill(shims[0], syscall.SIGKILL))
	for range 2 {
		select {
		case a := <-answers:
			if a.code != 500 || a.res.Status != "error" || !strings.Contains(a.res.Error, "shim died") {
				t.Errorf("run on the killed shim: %d, status %q, error %q", a.code, a.res.Status, a.res.Error)
			}
			if d := a.at.Sub(killed); d > 5*time.Second {
				t.Errorf("run answered %s after its shim's death", d)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a run on the killed shim was not answered within 30s")
		}
	}
	code, _, body := s.post(t, `{"lang":"python","code":"print('next')"}`)
	var res result
	if code != 200 || json.Unmarshal(body, &res) != nil || res.Stdout != "next\n" {
		t.Errorf("run after the shim's death: %d %s", code, body)
	}
	s.stop(t)
	// containerd's cleanup after the dead shim runs on its own; it must
	// finish within a bounded time.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if len(processesMatching(stateDir)) == 0 && len(runtimeState()) == 0 {
			break
		}
	}
	assertClean(t)
}

// TestServeKilledSharedShimsReaped kills a server with SIGKILL while runs
// use its shared shims: the next boxer command reaps the runs, the
// anchors, their sandbox records and the shims.
func TestServeKilledSharedShimsReaped(t *testing.T) {
	// Three pre-created: two fillers each hold one and the channel one
	// more. Background work yields to running requests, so the pool is
	// full before the run comes, and the run's take leaves two behind.
	s := startServer(t, "--warm", "python", "--warm-size", "3", "--shared-shims", "2")
	waitSandboxes := func(n int, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(bundleSandboxes()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("want %s on shared shims: %v\n%s", what, bundleSandboxes(), s.log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitSandboxes(3, "three pre-created sandboxes")
	// The run's answer never comes: the server is killed under it.
	go func() {
		if resp, err := s.client.Post(s.url+"/v1/runs", "application/json", strings.NewReader(`{"lang":"python","code":"import time; time.sleep(60)"}`)); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(15 * time.Second); metric(t, s, "boxer_warm_runs_total") < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run took no pre-created sandbox: %s", s.log)
		}
	}
	waitSandboxes(3, "a run and two pre-created sandboxes")
	must(t, s.cmd.Process.Kill())
	_ = s.cmd.Wait()
	recs, err := client.SandboxStore().List(context.Background())
	if err != nil || len(recs) == 0 {
		t.Fatalf("want the killed server's sandbox records left behind: %d, %v", len(recs), err)
	}
	if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if len(processesMatching(stateDir)) == 0 && len(runtimeState()) == 0 {
			break
		}
	}
	assertClean(t)
}

// runningMembers counts the running tasks that joined a sandbox's shim.
func runningMembers() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tasks, err := client.TaskService().List(ctx, nil)
	if err != nil {
		return 0
	}
	n := 0
	for _, tk := range tasks.Tasks {
		sandbox := filepath.Join(stateDir, "containerd", "io.containerd.runtime.v2.task", namespace, tk.ID, "sandbox")
		if _, err := os.Stat(sandbox); err == nil && tk.Status == task.Status_RUNNING {
			n++
		}
	}
	return n
}

// bundleSandboxes lists the sandbox IDs that task bundles name: containerd
// writes one into the bundle of a task that joined a sandbox's shim
// (core/runtime/v2/shim_manager.go, Start).
func bundleSandboxes() []string {
	files, _ := filepath.Glob(filepath.Join(stateDir, "containerd", "io.containerd.runtime.v2.task", namespace, "*", "sandbox"))
	var ids []string
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			ids = append(ids, string(data))
		}
	}
	return ids
}

// metric reads a counter or gauge without labels from the server's metrics.
func metric(t *testing.T, s *server, name string) int {
	t.Helper()
	resp, err := s.client.Get(s.url + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var n int
	for _, l := range strings.Split(string(data), "\n") {
		if _, err := fmt.Sscanf(l, name+" %d", &n); err == nil {
			return n
		}
	}
	t.Fatalf("no %s in the metrics", name)
	return 0
}
