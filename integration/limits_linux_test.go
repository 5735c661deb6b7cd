package integration

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTimeout(t *testing.T) {
	// The loop says how much CPU it has had, every 10 ms of it.
	loop := "import time\nlast = 0\nwhile True:\n    c = time.process_time()\n    if c - last >= 0.01:\n        print(int(c * 1000), flush=True)\n        last = c\n"
	res, r := python(t, loop, "--timeout", "2s")
	if res.Status != "timeout" || res.ExitCode != 124 || r.code != 124 {
		t.Fatalf("status %s exit %d (boxer %d), want timeout 124", res.Status, res.ExitCode, r.code)
	}
	if res.DurationMs < 1900 || res.DurationMs > 3000 {
		t.Errorf("duration_ms = %.0f, want about 2000", res.DurationMs)
	}
	if r.wall > 5*time.Second {
		t.Errorf("boxer took %s for a 2s timeout", r.wall)
	}
	// It burnt CPU, within --cpus 1: the figure is the sandbox's own, at
	// least what the loop last said it had had. Not the whole 2 s: on a
	// loaded host (make test beside two more runs, two cores) the loop got
	// 209 ms of them.
	lines := strings.Fields(res.Stdout)
	said, err := strconv.Atoi(lines[max(0, len(lines)-1)])
	if err != nil || said <= 0 {
		t.Fatalf("the loop said %q, want its CPU time", res.Stdout)
	}
	if res.CPUTimeMs < float64(said) || res.CPUTimeMs > 2600 {
		t.Errorf("cpu_time_ms = %.0f, want at least the %d ms the loop had, and at most 2600 for 2 s at --cpus 1", res.CPUTimeMs, said)
	}
	assertClean(t)
}

func TestTimeoutKillsEveryProcess(t *testing.T) {
	// Children that ignore signals and outlive their parent's exit still go.
	res, _ := python(t, `
import os, signal, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True: time.sleep(1)
while True: time.sleep(1)
`, "--timeout", "1s")
	if res.Status != "timeout" {
		t.Fatalf("status %s, want timeout", res.Status)
	}
	assertClean(t)
}

func TestOOM(t *testing.T) {
	res, r := python(t, `
x = []
while True:
    x.append(bytearray(1 << 20))
`, "--memory", "64m")
	if res.Status != "oom" || res.ExitCode != 137 || r.code != 137 {
		t.Fatalf("status %s exit %d (boxer %d), want oom 137: %s", res.Status, res.ExitCode, r.code, res.Stderr)
	}
	if res.MemoryPeakBytes < 60<<20 || res.MemoryPeakBytes > 64<<20 {
		t.Errorf("memory_peak_bytes = %d, want close to 64 MiB", res.MemoryPeakBytes)
	}
	assertClean(t)
}

func TestExit137IsNotOOM(t *testing.T) {
	// 137 alone is not OOM: the kernel's OOM counter for the cgroup decides.
	res, _ := python(t, `import os; os._exit(137)`)
	if res.Status == "oom" || res.ExitCode != 137 {
		t.Errorf("status %s exit %d, want not oom and 137", res.Status, res.ExitCode)
	}
	assertClean(t)
}

func TestSignalReported(t *testing.T) {
	// A segfault: the kernel's SIGSEGV ends even a PID namespace's init.
	res, _ := python(t, `import ctypes; ctypes.string_at(0)`)
	if res.Status != "killed" || res.ExitCode != 139 || res.Signal != "SIGSEGV" {
		t.Errorf("status %s exit %d signal %q, want killed 139 SIGSEGV", res.Status, res.ExitCode, res.Signal)
	}
	assertClean(t)
}

func TestForkBombStopsAtPids(t *testing.T) {
	res, _ := python(t, `
import os, time
n = 1
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped at", n, e.strerror)
`, "--pids", "20", "--timeout", "20s")
	var n int
	if _, err := fmtSscanf(res.Stdout, "stopped at %d", &n); err != nil {
		t.Fatalf("fork bomb was not stopped: %q %q", res.Stdout, res.Stderr)
	}
	if n > 20 {
		t.Errorf("%d processes, want at most 20", n)
	}
	if !strings.Contains(res.Stdout, "Resource temporarily unavailable") {
		t.Errorf("want EAGAIN from fork, got %q", res.Stdout)
	}
	assertClean(t)
}

func TestTmpAndWorkspaceSize(t *testing.T) {
	for _, dir := range []string{"/tmp", "/workspace"} {
		t.Run(strings.TrimPrefix(dir, "/"), func(t *testing.T) {
			res, _ := python(t, strings.ReplaceAll(`
import errno
n = 0
try:
    with open("DIR/fill", "wb") as f:
        while True:
            f.write(b"x" * 65536); f.flush(); n += 65536
except OSError as e:
    print(errno.errorcode[e.errno], n)
`, "DIR", dir), "--tmp-size", "8m", "--memory", "256m")
			var code string
			var n int
			if _, err := fmtSscanf(strings.ReplaceAll(res.Stdout, "ENOSPC", "ENOSPC "), "%s %d", &code, &n); err != nil || code != "ENOSPC" {
				t.Fatalf("filling %s: want ENOSPC, got %q %q", dir, res.Stdout, res.Stderr)
			}
			if n > 8<<20 || n < 7<<20 {
				t.Errorf("wrote %d bytes, want about 8 MiB", n)
			}
		})
	}
	assertClean(t)
}

func TestOutputLimitAndFlatMemory(t *testing.T) {
	// 1 GiB on stdout: boxer keeps the first 1 MiB and drains the rest.
	code := `
import sys
chunk = b"y" * (1 << 20)
for _ in range(1024):
    sys.stdout.buffer.write(chunk)
sys.stdout.flush()
print("done", file=sys.stderr)
`
	r := boxerSampled(t, nil, "run", "--json", "--lang", "python", "--timeout", "120s", "--memory", "64m", "-c", code)
	var res result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bad JSON (%v): stderr %q", err, r.stderr)
	}
	if res.Status != "exited" || res.ExitCode != 0 {
		t.Fatalf("status %s exit %d: %s", res.Status, res.ExitCode, res.Stderr)
	}
	if len(res.Stdout) != 1<<20 || !res.StdoutTruncated {
		t.Errorf("stdout %d bytes truncated=%v, want 1 MiB and true", len(res.Stdout), res.StdoutTruncated)
	}
	if res.Stderr != "done\n" || res.StderrTruncated {
		t.Errorf("stderr %q truncated=%v", res.Stderr, res.StderrTruncated)
	}
	// Flat: boxer's peak RSS (wait4's) within a few MiB of a run that
	// prints one line; and what it holds itself, its anonymous memory
	// (not its binary's pages, which a fresh build may have mapped in
	// large folios), under 64 MiB.
	small := boxerSampled(t, nil, "run", "--json", "--lang", "python", "-c", "print(1)")
	t.Logf("boxer peak RSS %d KiB (anonymous %d KiB) for 1 GiB of output, %d KiB (%d KiB) for one line", r.maxRSS, r.anonPeak, small.maxRSS, small.anonPeak)
	if r.maxRSS > small.maxRSS+8<<10 || r.anonPeak > small.anonPeak+16<<10 {
		t.Errorf("boxer peak RSS %d KiB (anonymous %d KiB) for 1 GiB of output vs %d KiB (%d KiB) for one line: not flat", r.maxRSS, r.anonPeak, small.maxRSS, small.anonPeak)
	}
	if r.anonPeak == 0 || r.anonPeak > 64<<10 {
		t.Errorf("boxer held %d KiB of anonymous memory for 1 GiB of output, want under 64 MiB", r.anonPeak)
	}
	// Plain mode streams and caps the same way.
	p := boxerSampled(t, nil, "run", "--lang", "python", "--output-limit", "1000", "--timeout", "120s", "-c", code)
	if p.code != 0 || len(p.stdout) != 1000 || !strings.Contains(p.stderr, "stdout truncated to 1000 bytes") {
		t.Errorf("plain mode: exit %d, %d bytes, stderr %q", p.code, len(p.stdout), p.stderr)
	}
	if p.anonPeak == 0 || p.anonPeak > 64<<10 {
		t.Errorf("plain mode: boxer held %d KiB of anonymous memory, want under 64 MiB", p.anonPeak)
	}
	assertClean(t)
}

func TestCPUQuota(t *testing.T) {
	// Two busy threads burn 0.6 s of CPU between them: under --cpus 0.5
	// that takes at least about 1.2 s of wall time (one CFS period's
	// burst less), where an idle host unlimited takes 0.3 s. Timed by the
	// CPU the program used, not by the wall: a loaded host (make test
	// beside another) gives a sandbox less CPU than its quota, and only
	// slows it further (a 1 s burn got 124 ms there).
	res, _ := python(t, `
import threading, time
start = time.monotonic()
def burn():
    while time.process_time() < 0.6: pass
ts = [threading.Thread(target=burn) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
print(round(time.monotonic() - start, 3))
`, "--cpus", "0.5", "--timeout", "60s")
	wall, err := strconv.ParseFloat(strings.TrimSpace(res.Stdout), 64)
	if err != nil {
		t.Fatalf("the program said %q (%s): %v", res.Stdout, res.Stderr, err)
	}
	if wall < 0.9 {
		t.Errorf("0.6 s of CPU on two threads took %.2f s of wall time under --cpus 0.5, want at least about 1.2 s", wall)
	}
	if res.CPUTimeMs < 550 || res.CPUTimeMs > 2000 {
		t.Errorf("cpu_time_ms = %.0f, want about 600 (what the program burned, and its start)", res.CPUTimeMs)
	}
	assertClean(t)
}

func fmtSscanf(s, format string, args ...any) (int, error) {
	return fmt.Sscanf(strings.TrimSpace(s), format, args...)
}
