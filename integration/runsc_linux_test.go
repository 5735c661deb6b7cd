package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRunscSameContract checks that --runtime runsc keeps runc's contract:
// result fields, limits, exit codes, files and cleanup.
func TestRunscSameContract(t *testing.T) {
	rs := []string{"--runtime", "runsc"}
	t.Run("result", func(t *testing.T) {
		res, r := python(t, `import sys; print("out"); print("err", file=sys.stderr); sys.exit(3)`, rs...)
		if r.code != 3 || res.Status != "exited" || res.Stdout != "out\n" || res.Stderr != "err\n" || res.Runtime != "runsc" {
			t.Errorf("exit %d result %+v", r.code, res)
		}
		if res.DurationMs <= 0 || res.MemoryPeakBytes == 0 || res.CPUTimeMs <= 0 {
			t.Errorf("figures not filled: %+v", res)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		res, r := python(t, "while True: pass", append(rs, "--timeout", "2s")...)
		if res.Status != "timeout" || r.code != 124 || res.DurationMs < 1900 || res.DurationMs > 3500 {
			t.Errorf("status %s exit %d duration %.0f", res.Status, r.code, res.DurationMs)
		}
	})
	t.Run("oom", func(t *testing.T) {
		res, r := python(t, "x = []\nwhile True: x.append(bytearray(1 << 20))", append(rs, "--memory", "64m")...)
		if res.Status != "oom" || r.code != 137 {
			t.Errorf("status %s exit %d", res.Status, r.code)
		}
	})
	for argv0, want := range map[string]int{"no-such-command": 127, "/no/such": 127, "/etc/passwd": 126} {
		t.Run("exec "+argv0, func(t *testing.T) {
			r := boxer(t, nil, append(append([]string{"run"}, rs...), "--image", "boxer/python", "--", argv0)...)
			if r.code != want {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, want, r.stderr)
			}
		})
	}
	t.Run("files", func(t *testing.T) {
		in, out := t.TempDir(), t.TempDir()
		must(t, os.WriteFile(filepath.Join(in, "n.txt"), []byte("20"), 0o644))
		stdin := filepath.Join(t.TempDir(), "stdin")
		must(t, os.WriteFile(stdin, []byte("22"), 0o644))
		res, _ := python(t, `import sys; open("sum.txt", "w").write(str(int(open("n.txt").read()) + int(sys.stdin.read())))`,
			append(rs, "--copy-in", in, "--copy-out", out, "--stdin-file", stdin)...)
		if data, err := os.ReadFile(filepath.Join(out, "sum.txt")); err != nil || string(data) != "42" {
			t.Errorf("sum.txt %q %v (stderr %q)", data, err, res.Stderr)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--runtime", "runsc", "--lang", "python", "-c", "import time; time.sleep(60)")
		cmd.Env = testEnv
		must(t, cmd.Start())
		time.Sleep(700 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 143 {
			t.Errorf("exit %d after SIGTERM, want 143", code)
		}
	})
	assertClean(t)
}
