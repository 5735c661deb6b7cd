package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fakeShimEnv makes the test binary a stand-in shim (testMain).
const fakeShimEnv = "BOXER_TEST_FAKE_SHIM"

// startFakeShim starts a process whose command line is a shim server's
// for sandbox id of the test containerd in namespace ns; done is closed
// when it ends.
func startFakeShim(t *testing.T, ns, id string) (done chan struct{}, stop func()) {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	cmd := &exec.Cmd{
		Path: self,
		Args: []string{filepath.Join(dir, "containerd-shim-runc-v2"), "-namespace", ns, "-id", id, "-address", filepath.Join(stateDir, "containerd.sock")},
		Env:  append(os.Environ(), fakeShimEnv+"=1"),
		Dir:  dir,
	}
	must(t, cmd.Start())
	done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return done, func() {
		_ = cmd.Process.Kill()
		<-done
	}
}

// TestLostShimSwept: a shim of boxer's that containerd has no container
// of (containerd gives up on a shim that does not shut down in time, and
// it then lives on, serving nothing; seen under load, a session's shim
// outliving it) is ended by the next reaper pass; another namespace's is
// left alone.
func TestLostShimSwept(t *testing.T) {
	lost, stopLost := startFakeShim(t, namespace, "bx-lost-0123456789abcdef")
	defer stopLost()
	other, stopOther := startFakeShim(t, namespace+"-other", "bx-lost-0123456789abcdef")
	defer stopOther()
	if r := boxer(t, nil, "session", "ls"); r.code != 0 {
		t.Fatalf("session ls: %d %s", r.code, r.stderr)
	}
	select {
	case <-lost:
	case <-time.After(15 * time.Second):
		t.Error("a lost shim lives on 15 s after a reaper pass")
	}
	select {
	case <-other:
		t.Error("another namespace's shim was ended")
	default:
	}
}
