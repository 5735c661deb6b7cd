// Package integration tests boxer end to end: the boxer binary, a private
// containerd started for the test run, real runc, real sandboxes.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/internal/leftover"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner"
	containerd "github.com/containerd/containerd/v2/client"
)

// Test-wide state, set up by TestMain.
var (
	boxerBin string
	// testEnv points boxer at the private containerd of this test run.
	testEnv []string
	// stateDir and rootDir are boxer's BOXER_STATE and BOXER_ROOT here.
	stateDir, rootDir string
	// namespace is this run's own, so that two test runs on one host (a
	// developer's and CI's) never see each other's sandboxes or cgroups.
	namespace = "bt-" + strconv.Itoa(os.Getpid())
	// testWorld is this run's directory (containerd's root and state,
	// boxer's): another run's is another /tmp/bxt-*.
	testWorld string
	client    *containerd.Client
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Getenv(fakeShimEnv) != "" {
		// A stand-in for a shim containerd lost (TestLostShimSwept):
		// it only waits to be ended.
		time.Sleep(10 * time.Minute)
		return 0
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "integration tests need root (they start containerd and runc)")
		return 1
	}
	// Short paths: unix sockets live under stateDir and must stay under 108 bytes.
	base, err := os.MkdirTemp("", "bxt-")
	testWorld = base
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	defer func() {
		// Runs after the daemon is stopped: anything of ours still there is
		// a leak, reported as a failure and then removed.
		if !removeTestWorld(base) && code == 0 {
			os.Exit(1)
		}
	}()
	// As /run is: a sandbox's root in its user namespace, a host uid of
	// its own, walks down to its task's bundle.
	if err := os.Chmod(base, 0o711); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	boxerBin = filepath.Join(base, "boxer")
	build := exec.Command("go", "build", "-o", boxerBin, "../cmd/boxer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building boxer:", err)
		return 1
	}
	// boxer-init, boxer-wrap and boxer's runc shim beside boxer, where
	// boxer looks for them first, built as 'make build' builds them.
	for _, name := range []string{"boxer-init", "boxer-wrap"} {
		cc := exec.Command("musl-gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", filepath.Join(base, name), "../init/"+name+".c")
		cc.Stdout, cc.Stderr = os.Stderr, os.Stderr
		if err := cc.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", name, err)
			return 1
		}
	}
	shim := exec.Command("go", "build", "-o", filepath.Join(base, runner.ShimName), "../cmd/"+runner.ShimName)
	shim.Env = append(os.Environ(), "CGO_ENABLED=0")
	shim.Stdout, shim.Stderr = os.Stderr, os.Stderr
	if err := shim.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the runc shim:", err)
		return 1
	}
	stateDir, rootDir = filepath.Join(base, "s"), filepath.Join(base, "r")
	testEnv = boxerEnv(rootDir, stateDir)

	// The layer cache is shared with the host's boxer so that a test run does
	// not debootstrap again; the image itself goes into the test's containerd.
	setup := exec.Command(boxerBin, "--namespace", namespace, "setup")
	setup.Env = testEnv
	setup.Stdout, setup.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := setup.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "boxer setup:", err)
		stopDaemon(testEnv)
		return 1
	}
	fmt.Fprintf(os.Stderr, "test containerd and image ready in %.1fs\n", time.Since(start).Seconds())
	defer stopDaemon(testEnv)

	client, err = containerd.New(filepath.Join(stateDir, "containerd.sock"), containerd.WithDefaultNamespace(namespace))
	if err != nil {
		fmt.Fprintln(os.Stderr, "connecting to test containerd:", err)
		return 1
	}
	defer client.Close()
	code = m.Run()
	stopInternet()
	return code
}

// removeTestWorld ends the shims that a test's containerd left (by PID: they
// are this test run's), unmounts what is left under base and removes it. It
// reports whether base was clean.
func removeTestWorld(base string) bool {
	clean := true
	for _, pid := range standbyMakers() {
		clean = false
		fmt.Fprintln(os.Stderr, "leak: standby maker", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, p := range processesMatching(base) {
		clean = false
		fmt.Fprintln(os.Stderr, "leak: process", p)
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Containers whose shim is gone (killed above, or by a test) may still
	// have a runc init process: runc removes them, their processes and
	// cgroups. Each of the run's namespaces has a runtime root.
	for _, ns := range runNamespaces() {
		if !removeRuntimeRoot(filepath.Join("/run/containerd/runc", ns)) {
			clean = false
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	var points []string
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], base) {
			points = append(points, f[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, m := range points {
		clean = false
		fmt.Fprintln(os.Stderr, "leak: mount", m)
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	// The namespace's cgroups are this test run's: a sandbox's left behind
	// loses its processes (sandbox processes of this run) and goes, then
	// the empty parents.
	for _, dir := range cgroupDirs() {
		leaves, _ := filepath.Glob(filepath.Join(dir, "bx-*"))
		for _, leaf := range leaves {
			clean = false
			fmt.Fprintln(os.Stderr, "leak: cgroup", leaf)
			procs, _ := os.ReadFile(filepath.Join(leaf, "cgroup.procs"))
			for _, f := range strings.Fields(string(procs)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		for _, leaf := range leaves {
			for i := 0; i < 50; i++ {
				if err := os.Remove(leaf); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		_ = os.Remove(dir)
	}
	if len(points) == 0 {
		os.RemoveAll(base)
	} else {
		fmt.Fprintln(os.Stderr, "leaving", base, "in place: it had mounts")
	}
	return clean
}

// removeRuntimeRoot removes what runc and runsc keep of a namespace's
// containers under runcRoot, and the directory, reporting whether there
// was nothing but the directory.
func removeRuntimeRoot(runcRoot string) bool {
	clean := true
	entries, _ := os.ReadDir(runcRoot)
	for _, e := range entries {
		clean = false
		fmt.Fprintln(os.Stderr, "leak: runtime state", filepath.Join(runcRoot, e.Name()))
		switch id, isRunsc := strings.CutSuffix(e.Name(), ".state"); {
		case e.IsDir(): // runc's
			_ = exec.Command(runtimeBinary("runc"), "--root", runcRoot, "delete", "--force", e.Name()).Run()
		case isRunsc: // runsc's: ID_sandbox:ID.state
			id, _, _ = strings.Cut(id, "_sandbox:")
			_ = exec.Command(runtimeBinary("runsc"), "--root", runcRoot, "delete", "--force", id).Run()
		}
	}
	// runsc pins its gofers' shared network namespace with a bind mount at
	// <root>/null-netns unless told not to; mounts may be stacked there.
	for syscall.Unmount(filepath.Join(runcRoot, "null-netns"), syscall.MNT_DETACH) == nil {
		clean = false
		fmt.Fprintln(os.Stderr, "leak: mount", filepath.Join(runcRoot, "null-netns"))
	}
	_ = os.RemoveAll(runcRoot)
	return clean
}

// runtimeBinary is the runtime the tests' daemons run: the pinned one
// 'make deps' built, else one on PATH.
func runtimeBinary(name string) string {
	if p, err := daemon.RuntimeBinary(name); err == nil {
		return p
	}
	return name
}

// boxerEnv is the environment of a boxer using a private world under root
// and state: never the host's containerd, never the host's boxer state.
func boxerEnv(root, state string) []string {
	cache := os.Getenv("BOXER_CACHE")
	if cache == "" {
		cache = "/var/lib/boxer/cache"
	}
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"BOXER_ROOT=" + root,
		"BOXER_STATE=" + state,
		"BOXER_CACHE=" + cache,
		"BOXER_SYSTEM_ADDRESS=",
		// Runs leave no standby, except in the tests of standbys.
		"BOXER_STANDBY=0",
	}
}

// stopDaemon stops the private containerd by its PID, through boxer.
func stopDaemon(env []string) {
	stop := exec.Command(boxerBin, "containerd", "stop")
	stop.Env = env
	stop.Stdout, stop.Stderr = os.Stderr, os.Stderr
	_ = stop.Run()
}

// result is boxer's JSON result; TestHelloAndResult checks its keys as JSON.
type result = runner.Result

// run is one finished boxer process.
type run struct {
	code   int
	stdout string
	stderr string
	maxRSS int64 // KiB, wait4's: boxer's and its reaped children's
	// anonPeak is the most anonymous memory boxer itself held (KiB),
	// sampled from /proc while it ran: only with boxerSampled.
	anonPeak int64
	wall     time.Duration
}

// boxer runs the boxer binary with args and the test environment plus extra.
func boxer(t *testing.T, extra []string, args ...string) run {
	t.Helper()
	return boxerRun(t, extra, false, args...)
}

// boxerSampled is boxer that also samples boxer's own anonymous memory
// (RssAnon) every 10 ms: its heap and stacks, not the pages of its
// binary, which a fresh build's page cache may map in large folios.
func boxerSampled(t *testing.T, extra []string, args ...string) run {
	t.Helper()
	return boxerRun(t, extra, true, args...)
}

func boxerRun(t *testing.T, extra []string, sample bool, args ...string) run {
	t.Helper()
	cmd := exec.Command(boxerBin, append([]string{"--namespace", namespace}, args...)...)
	cmd.Env = append(append([]string{}, testEnv...), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Start()
	var peak atomic.Int64
	if err == nil {
		if sample {
			done := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
				for {
					if kib := statusKiB(status, "RssAnon:"); kib > peak.Load() {
						peak.Store(kib)
					}
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}()
			err = cmd.Wait()
			close(done)
			<-sampled
		} else {
			err = cmd.Wait()
		}
	}
	r := run{stdout: out.String(), stderr: errb.String(), wall: time.Since(start), anonPeak: peak.Load()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running boxer %v: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss
	}
	return r
}

// statusKiB reads one "Key: N kB" line of a /proc status file (0 when
// the process is gone).
func statusKiB(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// runJSON runs 'boxer run --json ARGS' and decodes the result.
func runJSON(t *testing.T, args ...string) (result, run) {
	t.Helper()
	r := boxer(t, nil, append([]string{"run", "--json"}, args...)...)
	var res result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("boxer run --json %v: bad JSON (%v): stdout %q stderr %q", args, err, r.stdout, r.stderr)
	}
	return res, r
}

// python runs code with the python preset and the given extra flags.
func python(t *testing.T, code string, flags ...string) (result, run) {
	t.Helper()
	return runJSON(t, append(append([]string{"--lang", "python"}, flags...), "-c", code)...)
}

// assertClean checks that nothing of any sandbox is left: no container, task
// or per-run snapshot in containerd, no shim process, no mount under the
// test's directories, no sandbox cgroup, no run directory.
func assertClean(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := client.Containers(ctx)
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	for _, c := range ctrs {
		t.Errorf("container %s left behind", c.ID())
	}
	tasks, err := client.TaskService().List(ctx, nil)
	if err != nil {
		t.Fatalf("listing tasks: %v", err)
	}
	for _, tk := range tasks.Tasks {
		t.Errorf("task %s left behind", tk.ID)
	}
	if err := client.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, info snapshotInfo) error {
		if info.Kind == snapshotActive {
			t.Errorf("active snapshot %s left behind", info.Name)
		}
		return nil
	}); err != nil {
		t.Fatalf("listing snapshots: %v", err)
	}
	recs, err := client.SandboxStore().List(ctx)
	if err != nil {
		t.Fatalf("listing sandbox records: %v", err)
	}
	for _, rec := range recs {
		t.Errorf("sandbox record %s left behind", rec.ID)
	}
	for _, p := range processesMatching(stateDir) {
		t.Errorf("process left behind: %s", p)
	}
	for _, pid := range standbyMakers() {
		t.Errorf("standby maker %d left behind", pid)
	}
	// A keeper exits once it sees its session's sandbox end.
	for deadline := time.Now().Add(5 * time.Second); len(leftover.Keepers(boxerBin)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range leftover.Keepers(boxerBin) {
		t.Errorf("session keeper %d left behind", pid)
	}
	held, err := client.LeasesService().List(ctx)
	if err != nil {
		t.Fatalf("listing leases: %v", err)
	}
	for _, l := range held {
		if strings.HasPrefix(l.ID, "boxer-") {
			t.Errorf("lease %s left behind", l.ID)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	runtimeRoot := filepath.Join("/run/containerd/runc", namespace) + "/"
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, stateDir) || strings.Contains(line, rootDir) || strings.Contains(line, runtimeRoot) {
			t.Errorf("mount left behind: %s", line)
		}
	}
	for _, dir := range cgroupDirs() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("cgroup left behind: %s", filepath.Join(dir, e.Name()))
			}
		}
	}
	runs, _ := os.ReadDir(filepath.Join(stateDir, "runs"))
	for _, e := range runs {
		t.Errorf("run directory left behind: %s", e.Name())
	}
	for _, p := range runtimeState() {
		t.Errorf("runtime state left behind: %s", p)
	}
	for _, h := range usernsLeases() {
		t.Errorf("user id block left leased to %s", h)
	}
	assertNoLinks(t)
}

// runtimeState lists containerd's task bundles and the runc shim's runc (or
// runsc) state of this test run.
func runtimeState() []string {
	var out []string
	for _, dir := range []string{filepath.Join(stateDir, "containerd", "io.containerd.runtime.v2.task", namespace), filepath.Join("/run/containerd/runc", namespace)} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// runNamespaces are this test run's containerd namespaces: its own,
// TestSessionOtherNamespace's second and TestFleet's second node's.
func runNamespaces() []string {
	return []string{namespace, namespace + "-other", namespace + "-fleet"}
}

// cgroupDirs are the parents of this test run's sandbox cgroups, in every
// hierarchy (v1 controllers, the hybrid cgroup2 mount, or v2's root), of
// each of its namespaces.
func cgroupDirs() []string {
	var out []string
	for _, ns := range runNamespaces() {
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", "boxer", ns))
		out = append(append(out, dirs...), filepath.Join("/sys/fs/cgroup", "boxer", ns))
	}
	return out
}

// processesMatching lists processes (other than containerd itself) whose
// command line mentions s: shims and sandboxes of this test run.
func processesMatching(s string) []string {
	return processLines(func(cmd string) bool { return strings.Contains(cmd, s) && strings.Contains(cmd, "shim") })
}

// processLines lists the processes whose command line match says yes to,
// by PID and command line.
func processLines(match func(cmd string) bool) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(bytes.TrimRight(data, "\x00")), "\x00", " ")
		if match(cmd) {
			out = append(out, e.Name()+" "+cmd)
		}
	}
	return out
}

// runTasks lists the IDs of the tasks that run programs: every task but
// those of the anchors through which a server's runc sandboxes share shims
// (they live as long as the server).
func runTasks(ctx context.Context) ([]string, error) {
	tasks, err := client.TaskService().List(ctx, nil)
	if err != nil {
		return nil, err
	}
	anchors, err := client.Containers(ctx, `labels."`+reaper.LabelAnchor+`"`)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, tk := range tasks.Tasks {
		if !slices.ContainsFunc(anchors, func(c containerd.Container) bool { return c.ID() == tk.ID }) {
			ids = append(ids, tk.ID)
		}
	}
	return ids, nil
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
