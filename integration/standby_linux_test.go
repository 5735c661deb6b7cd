package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/leftover"
	"github.com/boxer-dev/boxer/snapshots"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
)

// withStandby is the environment of a boxer that takes and leaves
// standbys, which expire after idle.
func withStandby(idle string) []string {
	return []string{"BOXER_STANDBY=1", "BOXER_STANDBY_IDLE=" + idle}
}

// standbys lists the unclaimed standbys of the test's containerd.
func standbys(t *testing.T) []string {
	t.Helper()
	cs, err := client.Containers(context.Background(), `labels."boxer.standby"`)
	must(t, err)
	var ids []string
	for _, c := range cs {
		if labels, err := c.Labels(context.Background()); err == nil && labels["boxer.standby"] != "" {
			ids = append(ids, c.ID())
		}
	}
	return ids
}

// waitStandbys waits until n standbys are ready (their gates started)
// and returns them.
func waitStandbys(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ids := standbys(t)
		ready := 0
		for _, id := range ids {
			if c, err := client.LoadContainer(context.Background(), id); err == nil {
				if task, err := c.Task(context.Background(), nil); err == nil {
					if st, err := task.Status(context.Background()); err == nil && st.Status == "running" {
						ready++
					}
				}
			}
		}
		if ready == n && len(ids) == n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d standbys (%d ready), want %d", len(ids), ready, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// standbyMakers lists the PIDs of this test run's standby makers: the
// detached boxer processes that wait to remove their standby.
func standbyMakers() []int { return leftover.StandbyMakers(boxerBin) }

// endStandbys asks every standby maker to remove its standby now (as it
// does at expiry), and waits for them to exit.
func endStandbys(t *testing.T) {
	t.Helper()
	for _, pid := range standbyMakers() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(20 * time.Second); len(standbyMakers()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("standby makers still there 20 s after SIGTERM: %v", standbyMakers())
		}
	}
}

// waitStandbyAlone waits until the last runs' makers are done: their
// runs' sandboxes removed and one standby made and ready, so that a
// SIGTERM (endStandbys) finds each maker's handlers set up (one killed
// before would leave its sandbox to the next boxer command's reaper).
func waitStandbyAlone(t *testing.T) {
	t.Helper()
	waitStandbys(t, 1)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		cs, err := client.Containers(context.Background())
		must(t, err)
		if len(cs) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sandboxes 20 s after the runs, want the standby alone", len(cs))
		}
	}
}

// claimed says whether a run's --debug log says it took a standby.
func claimed(r run) bool { return strings.Contains(r.stderr, "claimed standby") }

// TestStandby: a CLI run leaves a standby of its shape; the next run of
// that shape takes it, and its program sees exactly what it sees in a
// cold sandbox (argv, environment, parent, descriptors, credentials,
// stdin, processes); a run with --no-standby neither takes nor leaves one;
// a standby's maker removes it when asked to end early.
func TestStandby(t *testing.T) {
	// Not the program's PID: see sameAsCold.
	probe := `
import os, sys
st = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/self/status")}
print(open("/proc/self/cmdline").read().split("\0"), sorted(os.environ.items()), os.getppid(),
      sorted(os.listdir("/proc/self/fd")), os.getcwd(), [st.get(k) for k in ("Uid", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Threads")],
      len([p for p in os.listdir("/proc") if p.isdigit()]), sorted(os.listdir("/workspace")), sorted(os.listdir("/tmp")), repr(sys.stdin.read()))
open("/workspace/left", "w").write("x")
`
	stdin := filepath.Join(t.TempDir(), "stdin")
	must(t, os.WriteFile(stdin, []byte("line one\nline two"), 0o644))
	env := withStandby("5m")
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Cleanup(func() { endStandbys(t) })
			args := []string{"--debug", "run", "--runtime", rt, "--lang", "python", "--stdin-file", stdin, "-c", probe}
			cold := boxer(t, env, args...)
			if cold.code != 0 || claimed(cold) {
				t.Fatalf("first run: %d claimed %v %s", cold.code, claimed(cold), cold.stderr)
			}
			first := waitStandbys(t, 1)
			warm := boxer(t, env, args...)
			if warm.code != 0 || !claimed(warm) || !strings.Contains(warm.stderr, first[0]) {
				t.Fatalf("second run did not take standby %s: %d %s", first[0], warm.code, warm.stderr)
			}
			if warm.stdout != cold.stdout || !strings.Contains(cold.stdout, "'line one\\nline two'") {
				t.Errorf("a standby on %s differs from a cold sandbox:\nstandby %s\ncold    %s", rt, warm.stdout, cold.stdout)
			}
			// The run left the next one.
			next := waitStandbys(t, 1)
			if next[0] == first[0] {
				t.Errorf("the standby taken is still a standby: %s", first[0])
			}
			off := boxer(t, env, append([]string{"--debug", "run", "--no-standby"}, args[2:]...)...)
			if off.code != 0 || claimed(off) {
				t.Errorf("--no-standby took a standby: %d %s", off.code, off.stderr)
			}
			time.Sleep(time.Second)
			if got := standbys(t); len(got) != 1 || got[0] != next[0] {
				t.Errorf("standbys after a --no-standby run: %v, want only %s", got, next[0])
			}
			endStandbys(t)
			assertClean(t)
		})
	}
}

// TestStandbyRace: two runs that start together with one standby there:
// exactly one takes it, both run right.
func TestStandbyRace(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	env := withStandby("5m")
	args := []string{"--debug", "run", "--lang", "bash", "-c", "echo ran"}
	if r := boxer(t, env, args...); r.code != 0 {
		t.Fatalf("first run: %s", r.stderr)
	}
	for round := range 3 {
		waitStandbys(t, 1)
		var wg sync.WaitGroup
		results := make([]run, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = boxer(t, env, args...)
			}()
		}
		wg.Wait()
		n := 0
		for _, r := range results {
			if r.code != 0 || r.stdout != "ran\n" {
				t.Errorf("round %d: %d %q %s", round, r.code, r.stdout, r.stderr)
			}
			if claimed(r) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("round %d: %d runs took the one standby, want 1", round, n)
		}
	}
	// The last round's makers are under way: each removes its run's
	// sandbox, one makes the next standby. A SIGTERM before a maker has
	// set up its handlers would kill it, leaving its run's sandbox to the
	// next boxer command's reaper: wait until the runs' sandboxes are
	// gone and only the standby is left.
	waitStandbyAlone(t)
	endStandbys(t)
	assertClean(t)
}

// TestConcurrentRunsReapNothing: four runs at a time with standbys, so
// that runs race makers for standbys and every reaper pass (each run's and
// each maker's) races other processes' teardowns. No task may lose its
// container (a run that claimed a standby still being made removed the
// container its maker was creating a task for), and no reaper pass may
// take a sandbox being removed for one that did: no container record
// stands in for a task (reapOrphanTasks).
func TestConcurrentRunsReapNothing(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, errs := client.Subscribe(ctx, `topic=="/containers/create"`)
	var mu sync.Mutex
	var standIns []string
	go func() {
		for {
			select {
			case e := <-evs:
				v, err := typeurl.UnmarshalAny(e.Event)
				// boxer's sandboxes name their image; a stand-in has none.
				if c, ok := v.(*apievents.ContainerCreate); err == nil && ok && c.Image == "" {
					mu.Lock()
					standIns = append(standIns, c.ID)
					mu.Unlock()
				}
			case <-errs:
				return
			}
		}
	}()
	env := withStandby("5m")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if r := boxer(t, env, "run", "--lang", "bash", "-c", "echo ran"); r.code != 0 || r.stdout != "ran\n" {
					t.Errorf("run: %d %q %s", r.code, r.stdout, r.stderr)
				}
			}
		}()
	}
	wg.Wait()
	// The last runs' makers remove their runs' sandboxes: a SIGTERM
	// before a maker has set up its handlers would kill it, leaving its
	// run's sandbox to the next boxer command's reaper.
	waitStandbyAlone(t)
	endStandbys(t)
	time.Sleep(time.Second) // the last events
	mu.Lock()
	defer mu.Unlock()
	if len(standIns) > 0 {
		t.Errorf("reaper passes stood in for the containers of %d sandboxes being removed: %v", len(standIns), standIns)
	}
	assertClean(t)
}

// TestStandbyExpires: a standby no run takes is removed by its maker at
// its expiry, with no other boxer process running.
func TestStandbyExpires(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	if r := boxer(t, withStandby("2s"), "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	waitStandbys(t, 1)
	for deadline := time.Now().Add(15 * time.Second); len(standbys(t)) > 0 || len(standbyMakers()) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("standby %v (makers %v) still there 15 s after a 2 s expiry", standbys(t), standbyMakers())
		}
	}
	assertClean(t)
}

// TestStandbyCaps: one standby per shape, and StandbyTotal (4) in all.
func TestStandbyCaps(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	env := withStandby("5m")
	for i := range 2 {
		if r := boxer(t, env, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
			t.Fatalf("run %d: %s", i, r.stderr)
		}
		waitStandbys(t, 1)
	}
	// Five more shapes (their memory limits differ): four standbys at most.
	for i := range 5 {
		if r := boxer(t, env, "--debug", "run", "--memory", strconv.Itoa(100+i)+"m", "--lang", "bash", "-c", "true"); r.code != 0 || claimed(r) {
			t.Fatalf("run of shape %d: %d %s", i, r.code, r.stderr)
		}
		time.Sleep(1500 * time.Millisecond) // its standby is made
	}
	if got := standbys(t); len(got) != 4 {
		t.Errorf("%d standbys, want the cap of 4: %v", len(got), got)
	}
	endStandbys(t)
	assertClean(t)
}

// TestStandbyMakerKilled: a standby whose maker died with SIGKILL is
// reaped by the next boxer command, which does not take it; so is the
// sandbox a run handed to a maker killed before it removed it.
func TestStandbyMakerKilled(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	env := withStandby("5m")
	if r := boxer(t, env, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	waitStandbys(t, 1)
	for _, pid := range standbyMakers() {
		must(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	for deadline := time.Now().Add(5 * time.Second); len(standbyMakers()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--json", "--lang", "bash", "-c", "echo next")
	cmd.Env = testEnv
	var out bytes.Buffer
	cmd.Stdout = &out
	must(t, cmd.Run())
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Stdout != "next\n" {
		t.Fatalf("next run: %s", out.String())
	}
	assertClean(t)

	// A maker killed at once, before it removed the sandbox its run handed
	// it: that sandbox's owner (the run) is gone, and the next boxer
	// command reaps it.
	if r := boxer(t, env, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	for _, pid := range standbyMakers() {
		must(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	cs, err := client.Containers(context.Background())
	must(t, err)
	if len(cs) == 0 {
		t.Fatal("the run's sandbox was gone before its maker was killed: the kill came too late to test")
	}
	// What the killed maker asked of containerd last (a standby's
	// container or task) is still made after its death: wait for the
	// makers to be gone and containerd's sandboxes to stand still, or
	// the next command's reaping may come first and find nothing yet
	// (once, beside two other make tests: a task made after it).
	for deadline := time.Now().Add(5 * time.Second); len(standbyMakers()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	waitContainersStill(t)
	if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run after the kill: %s", r.stderr)
	}
	assertClean(t)
}

// TestStandbyImageReplaced: after an image is replaced under its name (as
// 'boxer image build' or 'boxer setup' do), a run does not take a standby
// made from the old one: it makes its own sandbox, on the new image.
func TestStandbyImageReplaced(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	env := withStandby("5m")
	if r := boxer(t, env, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	waitStandbys(t, 1)
	ctx := context.Background()
	is := client.ImageService()
	get := func(ref string) images.Image {
		img, err := is.Get(ctx, ref)
		if errdefs.IsNotFound(err) {
			img, err = is.Get(ctx, snapshots.NormalizeRef(ref))
		}
		must(t, err)
		return img
	}
	bash, python := get("boxer/bash"), get("boxer/python")
	old := bash.Target
	bash.Target = python.Target
	_, err := is.Update(ctx, bash, "target")
	must(t, err)
	restore := func() {
		bash.Target = old
		if _, err := is.Update(ctx, bash, "target"); err != nil {
			t.Errorf("restoring boxer/bash: %v", err)
		}
	}
	defer restore()
	r := boxer(t, env, "--debug", "run", "--no-standby", "--lang", "bash", "-c", "command -v python3")
	if r.code != 0 || claimed(r) {
		t.Fatalf("--no-standby run: %d %s", r.code, r.stderr)
	}
	r = boxer(t, env, "--debug", "run", "--lang", "bash", "-c", "command -v python3")
	if r.code != 0 || claimed(r) || !strings.Contains(r.stderr, "was replaced") || r.stdout != "/usr/bin/python3\n" {
		t.Errorf("run after the image was replaced: %d %q %s", r.code, r.stdout, r.stderr)
	}
	// That run's maker removes its sandbox and makes the next standby; a
	// SIGTERM before it has set up its handlers would kill it and leave
	// the run's sandbox to a next boxer command this test does not run.
	waitStandbys(t, 1)
	endStandbys(t)
	assertClean(t)
}

// waitContainersStill waits up to 10 s for the test containerd's
// containers and tasks to stay the same for half a second.
func waitContainersStill(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	state := func() string {
		cs, err := client.Containers(ctx)
		must(t, err)
		ts, err := client.TaskService().List(ctx, nil)
		must(t, err)
		var ids []string
		for _, c := range cs {
			ids = append(ids, "c:"+c.ID())
		}
		for _, tk := range ts.Tasks {
			ids = append(ids, fmt.Sprintf("t:%s:%d", tk.ID, tk.Status))
		}
		sort.Strings(ids)
		return strings.Join(ids, " ")
	}
	last := state()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		now := state()
		if now == last {
			return
		}
		last = now
	}
}
