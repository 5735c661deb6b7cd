package integration

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSessionPortEndsWithSession: 'boxer session port' stops listening and
// exits, saying why, once its session is removed from another terminal,
// without waiting for a connection. On runc and runsc.
func TestSessionPortEndsWithSession(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			id := createSession(t, "--lang", "bash", "--runtime", rt)
			cmd := exec.Command(boxerBin, "--namespace", namespace, "session", "port", id, "8000")
			cmd.Env = testEnv
			var errb strings.Builder
			cmd.Stderr = &errb
			// A pipe of the test's own: Wait, which runs from the start,
			// does not close it under the reader.
			out, w, err := os.Pipe()
			must(t, err)
			defer out.Close()
			cmd.Stdout = w
			must(t, cmd.Start())
			w.Close()
			exited := make(chan error, 1)
			done := make(chan struct{})
			go func() { exited <- cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					_ = cmd.Process.Signal(syscall.SIGKILL)
					<-done
				}
			})
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				<-done
				t.Fatalf("session port: %v %s", err, errb.String())
			}
			addr := strings.TrimSpace(line)

			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Fatalf("session rm: %d %s", r.code, r.stderr)
			}
			removed := time.Now()
			select {
			case err := <-exited:
				var code int
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				msg := strings.TrimSpace(errb.String())
				// Gone, or (caught while rm removed it) ended as removed.
				gone := strings.Contains(msg, "session "+id+" is gone") || strings.Contains(msg, "session "+id+" has ended (it was removed)")
				if code != 125 || !gone || !strings.Contains(msg, "stopped forwarding") {
					t.Errorf("session port exited %d saying %q, want 125 saying the session is gone", code, msg)
				}
				t.Logf("session port stopped %v after session rm", time.Since(removed).Round(time.Millisecond))
			case <-time.After(10 * time.Second):
				t.Fatalf("session port still runs 10 s after session rm (stderr %q)", errb.String())
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still accepts connections after its session was removed", addr)
			}
		})
	}
	assertClean(t)
}
