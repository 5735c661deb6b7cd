package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/userns"
)

// usernsLeases are the holders of the host's user id blocks that are run
// directories of this test run.
func usernsLeases() []string {
	entries, _ := os.ReadDir(userns.LeaseDir)
	var out []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(userns.LeaseDir, e.Name()))
		if err == nil && strings.HasPrefix(string(data), stateDir+"/") {
			out = append(out, e.Name()+" "+string(data))
		}
	}
	return out
}

// testRange is a user id range of this test run's own, of n blocks: far
// from the default, apart from other test runs'.
func testRange(n int) string {
	start := uint64(3<<30) + uint64(os.Getpid()%4096)*userns.Size*4
	return strconv.FormatUint(start, 10) + ":" + strconv.Itoa(n*userns.Size)
}

// counters is a program that takes all it can of three per-user counters
// of the kernel: inotify instances, pending signals (queued to itself,
// blocked) and pipe buffer pages (pipes grown to 1 MiB, 256 pages each,
// until the kernel refuses with EPERM past fs.pipe-user-pages-soft; the
// pages are charged when the size is set, not when written). It prints how
// many it got and holds them for a while.
const counters = `
import ctypes, fcntl, os, resource, signal, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0) >= 0:
    n += 1
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
s = 0
limit = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0]
while s < limit + 10 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    s += 1
p = 0
while p < 100:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
    except PermissionError:
        break
    p += 1
print("inotify", n, "sigpending", s, "limit", limit, "pipes", p, flush=True)
time.sleep(6)
`

// TestUsernsCounters: two sandboxes of the same user at once each get the
// kernel's per-user limits whole: 128 inotify instances, RLIMIT_SIGPENDING
// pending signals, fs.pipe-user-pages-soft pages of pipe buffers. With
// --userns=host (boxer before user namespaces) the two share each: what
// they got adds up to one limit at most (under load the second may start
// before the first has taken all).
func TestUsernsCounters(t *testing.T) {
	soft, err := os.ReadFile("/proc/sys/fs/pipe-user-pages-soft")
	must(t, err)
	pages, _ := strconv.Atoi(strings.TrimSpace(string(soft)))
	// The program grows at most 100 pipes to 256 pages each.
	if pages == 0 || pages/256 >= 100 {
		t.Fatalf("fs.pipe-user-pages-soft is %d: the test needs a limit below 100 pipes of 1 MiB (the default is 16384)", pages)
	}
	for _, mode := range []string{"private", "host"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "host" {
				// Host uid 1000's counters are every test run's on this
				// host: another's sandboxes once took them all.
				holdHostWide(t, "uid-1000-counters", "host uid 1000's counters")
			}
			var wg sync.WaitGroup
			res := make([]result, 2)
			for i := range res {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i] = pythonIn(t, []string{"BOXER_USERNS=" + mode}, counters, "--user", "1000:1000")
				}()
				// The first takes all before the second starts.
				time.Sleep(1500 * time.Millisecond)
			}
			wg.Wait()
			// inotify instances, pending signals, pipes of 1 MiB.
			var got [2][3]int
			var limit int
			for i, r := range res {
				f := strings.Fields(r.Stdout)
				if len(f) != 8 || r.ExitCode != 0 {
					t.Fatalf("sandbox %d: exit %d %q %q %s", i, r.ExitCode, r.Stdout, r.Stderr, r.Error)
				}
				got[i][0], _ = strconv.Atoi(f[1])
				got[i][1], _ = strconv.Atoi(f[3])
				limit, _ = strconv.Atoi(f[5])
				got[i][2], _ = strconv.Atoi(f[7])
			}
			want := [3]int{128, limit, pages / 256}
			names := [3]string{"inotify instances", "pending signals", "pipes of 1 MiB"}
			for j, name := range names {
				if mode == "private" {
					for i := range got {
						if got[i][j] != want[j] {
							t.Errorf("sandbox %d got %d %s, want %d (its own)", i, got[i][j], name, want[j])
						}
					}
				} else if sum := got[0][j] + got[1][j]; sum > want[j] || sum == 0 {
					t.Errorf("with --userns=host the sandboxes got %d and %d %s, want %d between them (the counter is shared)", got[0][j], got[1][j], name, want[j])
				}
			}
			t.Logf("%s: sandboxes got (inotify instances, pending signals, pipes of 1 MiB) %v, limits %v", mode, got, want)
			assertClean(t)
		})
	}
}

// pythonIn runs code with the python preset, the given extra environment
// and flags, and decodes the result.
func pythonIn(t *testing.T, env []string, code string, flags ...string) result {
	t.Helper()
	r := boxer(t, env, append(append([]string{"run", "--json", "--lang", "python"}, flags...), "-c", code)...)
	var res result
	if err := jsonUnmarshal(r.stdout, &res); err != nil {
		t.Errorf("boxer run: bad JSON (%v): stdout %q stderr %q", err, r.stdout, r.stderr)
	}
	return res
}

// holder writes /workspace/f, prints its uid_map and waits until the host
// writes /workspace/done.
const holder = `
import os, time
open("/workspace/f", "w").write("x")
print(open("/proc/self/uid_map").read().strip(), flush=True)
while not os.path.exists("/workspace/done"):
    time.sleep(0.05)
`

// background is a boxer command running on its own.
type background struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
}

func startBoxer(t *testing.T, env []string, args ...string) *background {
	t.Helper()
	b := &background{cmd: exec.Command(boxerBin, append([]string{"--namespace", namespace}, args...)...)}
	b.cmd.Env = append(append([]string{}, testEnv...), env...)
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.err
	must(t, b.cmd.Start())
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Kill()
			_ = b.cmd.Wait()
		}
	})
	return b
}

// holders waits until n sandboxes have written /workspace/f and returns
// their run directories.
func holders(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(stateDir, "runs", "*", "workspace", "f"))
		if len(files) >= n {
			var dirs []string
			for _, f := range files {
				dirs = append(dirs, filepath.Dir(filepath.Dir(f)))
			}
			return dirs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sandboxes started", len(files), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// release lets the holders end.
func release(t *testing.T, dirs []string) {
	for _, d := range dirs {
		must(t, os.WriteFile(filepath.Join(d, "workspace", "done"), nil, 0o644))
	}
}

// hostUIDs are the real, effective, saved and filesystem uids of the
// processes whose environment holds mark.
func hostUIDs(t *testing.T, mark string) map[int]string {
	t.Helper()
	out := map[int]string{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		status, err := os.ReadFile(p + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				pid, _ := strconv.Atoi(filepath.Base(p))
				out[pid] = strings.Join(strings.Fields(v), " ")
			}
		}
	}
	return out
}

// TestUsernsIdentity: two sandboxes of the same user at once map onto
// distinct blocks of host ids: their uid_map says so, the host sees their
// processes and their /workspace files as their block's 65534, neither's
// uid may signal the other's processes, and files copied out are the
// caller's.
func TestUsernsIdentity(t *testing.T) {
	mark := "BOXER_TEST_MARK=" + strconv.Itoa(os.Getpid())
	outs := []string{t.TempDir(), t.TempDir()}
	var bs []*background
	for _, out := range outs {
		bs = append(bs, startBoxer(t, nil, "run", "--json", "--lang", "python", "--env", mark, "--copy-out", out, "-c", holder))
	}
	dirs := holders(t, 2)
	bases := map[uint32]bool{}
	var sandboxUIDs []uint32
	for _, d := range dirs {
		base, err := userns.Owner(filepath.Join(d, "userns"))
		if err != nil {
			t.Fatalf("user namespace of %s: %v", d, err)
		}
		bases[base] = true
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(d, "workspace", "f"), &st))
		if st.Uid != base+65534 || st.Gid != base+65534 {
			t.Errorf("/workspace/f is %d:%d on the host, want %d:%d", st.Uid, st.Gid, base+65534, base+65534)
		}
		sandboxUIDs = append(sandboxUIDs, base+65534)
	}
	if len(bases) != 2 {
		t.Fatalf("two sandboxes share a block: %v", bases)
	}
	procs := hostUIDs(t, mark)
	byUID := map[uint32]int{}
	for pid, uids := range procs {
		f := strings.Fields(uids)
		u, _ := strconv.ParseUint(f[0], 10, 32)
		if uids != strings.Repeat(f[0]+" ", 3)+f[0] || !bases[uint32(u)-65534] {
			t.Errorf("process %d has host uids %s, want its block's 65534", pid, uids)
		}
		byUID[uint32(u)] = pid
	}
	if len(byUID) != 2 {
		t.Fatalf("want processes of two host uids, got %v", procs)
	}
	// A process of the one may not signal the other's; of its own, it may.
	victim := byUID[sandboxUIDs[0]]
	for i, uid := range sandboxUIDs {
		kill := exec.Command("/bin/sh", "-c", "kill -0 "+strconv.Itoa(victim))
		kill.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		err := kill.Run()
		if i == 0 && err != nil {
			t.Errorf("uid %d cannot signal its own process: %v", uid, err)
		}
		if i == 1 && err == nil {
			t.Errorf("uid %d, another sandbox's, can signal process %d", uid, victim)
		}
	}
	release(t, dirs)
	maps := map[string]bool{}
	for i, b := range bs {
		if err := b.cmd.Wait(); err != nil {
			t.Fatalf("run %d: %v: %s", i, err, b.err.String())
		}
		var res result
		must(t, jsonUnmarshal(b.out.String(), &res))
		f := strings.Fields(res.Stdout)
		if len(f) != 3 || f[0] != "0" || f[2] != "65536" {
			t.Errorf("uid_map %q, want 0 BASE 65536", res.Stdout)
		}
		maps[res.Stdout] = true
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(outs[i], "f"), &st))
		if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("copied-out f is %d:%d, want the caller's 0:0", st.Uid, st.Gid)
		}
	}
	if len(maps) != 2 {
		t.Errorf("both sandboxes saw the same uid_map: %v", maps)
	}
	assertClean(t)
}

// TestUsernsPoolFull: with every block of the range held, a run fails at
// once with exit 125 (HTTP 503) naming --userns-range, and leaves nothing.
func TestUsernsPoolFull(t *testing.T) {
	env := []string{"BOXER_USERNS_RANGE=" + testRange(1)}
	b := startBoxer(t, env, "run", "--lang", "python", "-c", holder)
	dirs := holders(t, 1)
	r := boxer(t, env, "run", "--lang", "python", "-c", "print(1)")
	if r.code != 125 || !strings.Contains(r.stderr, "--userns-range") {
		t.Errorf("run with the range full: exit %d %q, want 125 naming --userns-range", r.code, r.stderr)
	}
	saved := testEnv
	testEnv = append(append([]string{}, testEnv...), env...)
	s := startServer(t)
	testEnv = saved
	if code, _, body := s.post(t, `{"lang":"python","code":"print(1)"}`); code != 503 {
		t.Errorf("POST with the range full: %d %s, want 503", code, body)
	}
	s.stop(t)
	if runs, _ := os.ReadDir(filepath.Join(stateDir, "runs")); len(runs) != 1 {
		t.Errorf("%d run directories, want the holder's only", len(runs))
	}
	release(t, dirs)
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("holder: %v: %s", err, b.err.String())
	}
	assertClean(t)
}

// TestUsernsLeasesReturned: a sandbox's block goes back after a timeout,
// an OOM kill, a SIGKILL of its boxer (the next command reaps it) and a
// session's end. The range has two blocks: one left held shows at once.
func TestUsernsLeasesReturned(t *testing.T) {
	env := []string{"BOXER_USERNS_RANGE=" + testRange(2)}
	held := func(step string, want int) {
		t.Helper()
		if got := usernsLeases(); len(got) != want {
			t.Errorf("after %s: %d blocks held (%v), want %d", step, len(got), got, want)
		}
	}
	if res := pythonIn(t, env, "import time; time.sleep(60)", "--timeout", "1s"); res.Status != "timeout" {
		t.Errorf("status %s, want timeout", res.Status)
	}
	held("a timeout", 0)
	if res := pythonIn(t, env, "x = []\nwhile True: x.append(bytearray(1 << 20))", "--memory", "64m"); res.Status != "oom" {
		t.Errorf("status %s, want oom", res.Status)
	}
	held("an OOM kill", 0)
	b := startBoxer(t, env, "run", "--lang", "python", "-c", holder)
	holders(t, 1)
	must(t, b.cmd.Process.Kill())
	_ = b.cmd.Wait()
	held("SIGKILL of boxer", 1)
	if r := boxer(t, env, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
		t.Fatalf("run after the kill: %d %s", r.code, r.stderr)
	}
	held("the next command", 0)
	// With --debug, and containerd's log of the session on a failure:
	// once (CI, 2026-11-28), rm found no session that create had just made.
	r := boxer(t, env, "--debug", "session", "create", "--lang", "python")
	if r.code != 0 {
		t.Fatalf("session create: %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	held("session create", 1)
	if rm := boxer(t, env, "--debug", "session", "rm", id); rm.code != 0 {
		t.Fatalf("session rm: %d\n%s\nsession create said:\n%s\ncontainerd said of it:\n%s", rm.code, rm.stderr, r.stderr, daemonLogOf(id))
	}
	held("session rm", 0)
	assertClean(t)
}

// daemonLogOf is what the test containerd's log says of id.
func daemonLogOf(id string) string {
	data, _ := os.ReadFile(filepath.Join(rootDir, "containerd.log"))
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, id) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestUsernsStandby: a standby is made with its run's user namespace
// setting, and a run of the other setting never takes it.
func TestUsernsStandby(t *testing.T) {
	t.Cleanup(func() { endStandbys(t) })
	args := []string{"--debug", "run", "--lang", "bash", "-c", "cat /proc/self/uid_map"}
	host := append([]string{"--userns=host"}, args...)
	if r := boxer(t, withStandby("5m"), host...); r.code != 0 {
		t.Fatalf("first run: %s", r.stderr)
	}
	waitStandbys(t, 1)
	r := boxer(t, withStandby("5m"), args...)
	if f := strings.Fields(r.stdout); r.code != 0 || claimed(r) || len(f) != 3 || f[1] == "0" {
		t.Errorf("a run in its own namespace: %d %q, claimed %v; want its own map, not the host's standby", r.code, r.stdout, claimed(r))
	}
	waitStandbys(t, 1)
	r = boxer(t, withStandby("5m"), host...)
	if f := strings.Fields(r.stdout); r.code != 0 || claimed(r) || len(f) != 3 || f[1] != "0" {
		t.Errorf("a run with --userns=host: %d %q, claimed %v; want the host's map, not a private standby", r.code, r.stdout, claimed(r))
	}
	waitStandbys(t, 1)
	endStandbys(t)
	assertClean(t)
}

// TestUsernsStateWalkable: boxer's state directory left 0700 (by an older
// boxer, or by a lease taken before the daemon made it) is opened for
// search, and the run works; a directory above it that is not boxer's is
// not changed, but named, with what to do.
func TestUsernsStateWalkable(t *testing.T) {
	t.Cleanup(func() {
		_ = os.Chmod(stateDir, 0o711)
		_ = os.Chmod(filepath.Dir(stateDir), 0o711)
	})
	must(t, os.Chmod(stateDir, 0o700))
	r := boxer(t, nil, "run", "--lang", "python", "-c", "print(1)")
	if r.code != 0 || r.stdout != "1\n" {
		t.Errorf("run with its state directory 0700: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if st, err := os.Stat(stateDir); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("state directory after the run: %v %v, want mode 0711", st.Mode().Perm(), err)
	}
	base := filepath.Dir(stateDir)
	must(t, os.Chmod(base, 0o700))
	r = boxer(t, nil, "run", "--lang", "python", "-c", "print(1)")
	must(t, os.Chmod(base, 0o711))
	if r.code != 125 || !strings.Contains(r.stderr, base+" (mode 0700) is not searchable") {
		t.Errorf("run under a 0700 directory not boxer's: exit %d %q, want 125 naming %s", r.code, r.stderr, base)
	}
	assertClean(t)
}
