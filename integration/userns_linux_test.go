package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// counters is a program that takes all it can of two per-user counters of
// the kernel, inotify instances and pending signals (queued to itself,
// blocked), prints how many it got, and holds them for a while.
const counters = `
import ctypes, os, resource, signal, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0) >= 0:
    n += 1
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
s = 0
limit = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0]
while s < limit + 10 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    s += 1
print("inotify", n, "sigpending", s, "limit", limit, flush=True)
time.sleep(6)
`

// TestUsernsCounters: two sandboxes of the same user at once each get the
// kernel's per-user limits whole: 128 inotify instances, RLIMIT_SIGPENDING
// pending signals. With --userns=host (boxer before user namespaces) the
// second gets what the first left.
func TestUsernsCounters(t *testing.T) {
	for _, mode := range []string{"private", "host"} {
		t.Run(mode, func(t *testing.T) {
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
			var got [2][3]int
			for i, r := range res {
				f := strings.Fields(r.Stdout)
				if len(f) != 6 || r.ExitCode != 0 {
					t.Fatalf("sandbox %d: exit %d %q %q %s", i, r.ExitCode, r.Stdout, r.Stderr, r.Error)
				}
				for j := range 3 {
					got[i][j], _ = strconv.Atoi(f[2*j+1])
				}
			}
			shared := got[1][0] < 128 || got[1][1] < got[1][2]
			if mode == "private" {
				for i, g := range got {
					if g[0] != 128 || g[1] != g[2] {
						t.Errorf("sandbox %d got %d inotify instances and %d pending signals, want 128 and %d (its own)", i, g[0], g[1], g[2])
					}
				}
			} else if !shared {
				t.Errorf("with --userns=host the second sandbox got %v, want less than the first %v (the counters are shared)", got[1], got[0])
			}
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
