package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/leftover"
)

// keeperBound is what the documentation promises of a keeper's memory.
const keeperBound = 100 << 20

// statusBytes is a field of /proc/PID/status in kB, in bytes (0: none).
func statusBytes(pid int, field string) int64 {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == field+":" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestKeeperFlood: a session's keeper stays under the 100 MiB its
// documentation promises, at its peak (VmHWM), while a process of the
// session writes as fast as it can for 30 s: in the background, with
// nobody attached (the keeper keeps the last MiB), then in the foreground,
// a 'session exec' following it to its end. On runc and runsc. A keeper
// under such a flood peaked at 168 MiB (issue 42).
func TestKeeperFlood(t *testing.T) {
	// One byte at a time to stdout and stderr in turn, as fast as it can:
	// each write a chunk of the keeper's ring.
	flood := []string{"--", "python3", "-c", `import os, time
end = time.time() + 30
while time.time() < end:
    for _ in range(1000):
        os.write(1, b"x")
        os.write(2, b"y")
`}
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "python", "--runtime", rt)
			if r := sessionExec(t, "", append([]string{id, "--bg", "--tag", "flood"}, flood...)...); r.code != 0 {
				t.Fatalf("exec --bg: %d %s", r.code, r.stderr)
			}
			// The keeper that holds the flood's process: the exec may
			// have started one beside the session's own, still starting.
			keeper := keeperOf(t, id)
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
				if ps := processes(t, id); !ps[len(ps)-1].Running {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the flood did not end in 60 s")
				}
			}
			bg := statusBytes(keeper, "VmHWM")
			t.Logf("keeper %d after 30 s of background flood: VmHWM %d MiB, VmRSS %d MiB", keeper, bg>>20, statusBytes(keeper, "VmRSS")>>20)
			if bg == 0 || bg > keeperBound {
				t.Errorf("keeper's peak after 30 s of background flood: %d MiB, want under %d MiB", bg>>20, keeperBound>>20)
			}

			cmd := exec.Command(boxerBin, append([]string{"--namespace", namespace, "session", "exec", id}, flood...)...)
			cmd.Env = testEnv
			start := time.Now()
			if err := cmd.Run(); err != nil || time.Since(start) < 25*time.Second {
				t.Fatalf("foreground flood: %v after %s, want exit 0 after 30 s", err, time.Since(start))
			}
			fg := statusBytes(keeper, "VmHWM")
			t.Logf("keeper %d after 30 s of foreground flood: VmHWM %d MiB, VmRSS %d MiB", keeper, fg>>20, statusBytes(keeper, "VmRSS")>>20)
			if fg > keeperBound {
				t.Errorf("keeper's peak after 30 s of foreground flood: %d MiB, want under %d MiB", fg>>20, keeperBound>>20)
			}
			if !slices.Contains(leftover.Keepers(boxerBin), keeper) {
				log, _ := os.ReadFile(filepath.Join(stateDir, "runs", id, "keeper.log"))
				t.Errorf("keeper %d is gone after the floods; its log:\n%s\nsession ls:\n%s", keeper, log, boxer(t, nil, "session", "ls").stdout)
			}
		})
	}
}
