package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The programs of the PID 1 tests. signalSelf's bash kills itself as a
// program on a host would; its status is a shell's.
var signalSelf = []struct {
	name, code string
	exit       int
	status     string
	signal     string
}{
	{"kill -TERM $$", "kill -TERM $$; echo survived", 143, "killed", "SIGTERM"},
	{"kill -KILL $$", "kill -KILL $$; echo survived", 137, "killed", "SIGKILL"},
	{"kill -INT $$", "kill -INT $$; echo survived", 130, "killed", "SIGINT"},
	{"exit 3", "exit 3", 3, "exited", ""},
}

// zombieProgram leaves 100 orphans that exit (each the child of a child
// the program waits for), then counts the zombies in its PID namespace
// until none are left or 5 seconds have passed.
const zombieProgram = `
import os, time
def zombies():
    n = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0] == "Z":
                    n += 1
            except OSError:
                pass
    return n
for _ in range(100):
    if os.fork() == 0:
        if os.fork() == 0:
            os._exit(0)
        os._exit(0)
    os.wait()
# A grandchild may still be exiting when a count first reads 0: the
# answer is a count that stays 0 for 0.2 s (init reaps at once).
deadline = time.time() + 5
n = zombies()
while time.time() < deadline:
    time.sleep(0.05 if n else 0.2)
    m = zombies()
    if n == 0 and m == 0:
        break
    n = m
print("zombies", n)
`

// checkSignalled checks a bash program's end against tc.
func checkSignalled(t *testing.T, where string, res result, exit int, status, signal string) {
	t.Helper()
	if res.ExitCode != exit || res.Status != status || res.Signal != signal || strings.Contains(res.Stdout, "survived") {
		t.Errorf("%s: exit %d status %q signal %q stdout %q stderr %q, want exit %d status %q signal %q",
			where, res.ExitCode, res.Status, res.Signal, res.Stdout, res.Stderr, exit, status, signal)
	}
}

// TestInitSignals: in a cold sandbox and in a CLI standby, on runc and
// runsc, a program that signals itself ends as on a host (PID 1 is
// boxer-init, not the program, which the kernel would shield from its
// own signals), and its status says so.
func TestInitSignals(t *testing.T) {
	env := withStandby("5m")
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Cleanup(func() { endStandbys(t) })
			for _, tc := range signalSelf {
				args := []string{"--debug", "run", "--json", "--runtime", rt, "--lang", "bash", "-c", tc.code}
				for _, warm := range []bool{false, true} {
					if warm {
						waitStandbys(t, 1)
					}
					r := boxer(t, env, args...)
					var res result
					if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
						t.Fatalf("%s: bad JSON (%v): %q %s", tc.name, err, r.stdout, r.stderr)
					}
					if claimed(r) != warm {
						t.Fatalf("%s: standby claimed %v, want %v: %s", tc.name, claimed(r), warm, r.stderr)
					}
					checkSignalled(t, fmt.Sprintf("%s (standby %v)", tc.name, warm), res, tc.exit, tc.status, tc.signal)
					if r.code != tc.exit {
						t.Errorf("%s: boxer exited %d, want %d", tc.name, r.code, tc.exit)
					}
				}
				// The warm run's maker has made the next standby: it can
				// be asked to end (a SIGTERM before it has set up its
				// handlers would kill it, leaving its run's sandbox).
				waitStandbys(t, 1)
				endStandbys(t)
			}
			assertClean(t)
		})
	}
}

// TestInitSignalsWarm: the same in the server's pre-created sandboxes.
func TestInitSignalsWarm(t *testing.T) {
	s := startServer(t, "--warm", "bash,bash:runsc", "--warm-size", "1", "--concurrency", "1")
	for _, rt := range runtimes {
		for _, tc := range signalSelf {
			body, _ := json.Marshal(map[string]any{"lang": "bash", "code": tc.code, "runtime": rt})
			// A pre-created sandbox, once the pool has refilled.
			deadline := time.Now().Add(20 * time.Second)
			for {
				before := warmRuns(t, s)
				status, _, resp := s.post(t, string(body))
				var res result
				if status != 200 || json.Unmarshal(resp, &res) != nil {
					t.Fatalf("%s %s: %d %s", rt, tc.name, status, resp)
				}
				if warmRuns(t, s) > before {
					checkSignalled(t, rt+" "+tc.name+" (warm)", res, tc.exit, tc.status, tc.signal)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s %s: no pre-created sandbox taken", rt, tc.name)
				}
				time.Sleep(300 * time.Millisecond)
			}
		}
	}
	s.stop(t)
	assertClean(t)
}

// TestInitReapsOrphans: orphans that exit are reaped at once, in a cold
// sandbox and in a standby, on runc and runsc.
func TestInitReapsOrphans(t *testing.T) {
	env := withStandby("5m")
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Cleanup(func() { endStandbys(t) })
			args := []string{"--debug", "run", "--json", "--runtime", rt, "--pids", "256", "--lang", "python", "-c", zombieProgram}
			for _, warm := range []bool{false, true} {
				if warm {
					waitStandbys(t, 1)
				}
				r := boxer(t, env, args...)
				var res result
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("bad JSON (%v): %q %s", err, r.stdout, r.stderr)
				}
				if claimed(r) != warm {
					t.Fatalf("standby claimed %v, want %v: %s", claimed(r), warm, r.stderr)
				}
				if res.ExitCode != 0 || res.Stdout != "zombies 0\n" {
					t.Errorf("standby %v: exit %d stdout %q stderr %q, want no zombie left", warm, res.ExitCode, res.Stdout, res.Stderr)
				}
			}
			waitStandbys(t, 1)
			endStandbys(t)
			assertClean(t)
		})
	}
}

// TestInitTimeoutKillsAll: a program and a child that both ignore
// SIGTERM still end at the timeout, and nothing of them is left. (The
// timeout kills the whole sandbox with SIGKILL, around boxer-init.)
func TestInitTimeoutKillsAll(t *testing.T) {
	code := `trap '' TERM; (trap '' TERM; while :; do sleep 1; done) & while :; do sleep 1; done`
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			res, r := runJSON(t, "--runtime", rt, "--timeout", "2s", "--lang", "bash", "-c", code)
			if res.Status != "timeout" || r.code != 124 || res.DurationMs < 1900 || res.DurationMs > 5000 {
				t.Errorf("status %s exit %d duration %.0f ms stderr %q", res.Status, r.code, res.DurationMs, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionReapsOrphans: the background children of a session's calls
// (processes containerd execs, whose orphans the PID namespace gives to
// its PID 1) are reaped once they exit.
func TestSessionReapsOrphans(t *testing.T) {
	count := `n=0; for s in /proc/[0-9]*/stat; do read -r l < "$s" 2>/dev/null || continue; set -- ${l##*) }; [ "$1" = Z ] && n=$((n+1)); done; echo "zombies $n"`
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "bash", "--runtime", rt, "--pids", "256")
			if res, r := sessionCall(t, id, `for i in $(seq 50); do (sleep 0.2 &); done; echo started`); res.ExitCode != 0 || res.Stdout != "started\n" {
				t.Fatalf("call 1: %+v %s", res, r.stderr)
			}
			var res result
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if res, _ = sessionCall(t, id, count); res.Stdout == "zombies 0\n" {
					break
				}
			}
			if res.ExitCode != 0 || res.Stdout != "zombies 0\n" {
				t.Errorf("after the calls' children ended: %+v", res)
			}
			boxer(t, nil, "session", "rm", id)
			assertClean(t)
		})
	}
}
