package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Faults of the host (docs/reference.md, "When the host fails"): each gives
// one line that says what happened and what to do, exit 125 (503 over
// HTTP), and leaves nothing behind once the host is whole again.

// oneLineFault checks that r is boxer's exit 125 with one line on stderr
// that contains each of want.
func oneLineFault(t *testing.T, r run, want ...string) {
	t.Helper()
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 {
		t.Fatalf("want one line, got %d:\n%s", len(lines), r.stderr)
	}
	lastLineFault(t, r, want...)
}

// lastLineFault is oneLineFault for a command that reports progress first:
// the fault is its last line.
func lastLineFault(t *testing.T, r run, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if r.code != 125 || !strings.HasPrefix(last, "boxer: ") {
		t.Fatalf("want exit 125 and a last line from boxer, got %d:\n%s", r.code, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("the line does not say %q: %s", w, last)
		}
	}
}

// killContainerd ends the test's private containerd with SIGKILL, by the
// PID boxer recorded when it started it, and waits until it is gone.
func killContainerd(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateDir, "containerd.pid"))
	must(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	must(t, err)
	must(t, unix.Kill(pid, unix.SIGKILL))
	for deadline := time.Now().Add(10 * time.Second); unix.Kill(pid, 0) == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("containerd %d still there after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restartContainerd starts the private containerd again and waits until the
// test's client gets answers from it.
func restartContainerd(t *testing.T) {
	t.Helper()
	if r := boxer(t, nil, "containerd", "start"); r.code != 0 {
		t.Fatalf("containerd start: %d %s", r.code, r.stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := client.Version(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd does not answer after a restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFaultContainerdKilledMidRun kills containerd while a program runs:
// boxer says so in one line and stops the program, and the next command
// (which starts containerd again) removes the rest.
func TestFaultContainerdKilledMidRun(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--runtime", rt, "--lang", "bash", "-c", "echo started; sleep 60; echo finished")
			cmd.Env = testEnv
			var errb strings.Builder
			pr, pw, err := os.Pipe()
			must(t, err)
			cmd.Stdout, cmd.Stderr = pw, &errb
			must(t, cmd.Start())
			pw.Close()
			// The program is in its sleep once it has said so (a fixed
			// wait was too short for gVisor under load).
			out := make(chan string, 1)
			started := make(chan struct{})
			go func() {
				var b bytes.Buffer
				buf := make([]byte, 4096)
				said := false
				for {
					n, err := pr.Read(buf)
					b.Write(buf[:n])
					if !said && bytes.Contains(b.Bytes(), []byte("started\n")) {
						said = true
						close(started)
					}
					if err != nil {
						pr.Close()
						out <- b.String()
						return
					}
				}
			}()
			select {
			case <-started:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("the program did not start in 60 s: %s", errb.String())
			}
			killContainerd(t)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("boxer run still waiting 30 s after containerd died: %s", errb.String())
			}
			r := run{code: cmd.ProcessState.ExitCode(), stdout: <-out, stderr: errb.String()}
			oneLineFault(t, r, "containerd at ", "stopped answering", "starts it again", "run again")
			if !strings.Contains(r.stdout, "started") || strings.Contains(r.stdout, "finished") {
				t.Errorf("stdout = %q", r.stdout)
			}
			// The sandbox's processes are gone with containerd down: its
			// cgroup is (boxer kills through it).
			for _, dir := range cgroupDirs() {
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if e.IsDir() {
						t.Errorf("sandbox cgroup still there with containerd down: %s", filepath.Join(dir, e.Name()))
					}
				}
			}
			restartContainerd(t)
			if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
				t.Fatalf("the next run: %d %s", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestFaultServerContainerdKilled is the HTTP side: with containerd gone a
// run is a 503 with the same one line, and once containerd is back the
// server runs again without a restart of its own.
func TestFaultServerContainerdKilled(t *testing.T) {
	s := startServer(t)
	killContainerd(t)
	status, _, body := s.post(t, `{"lang":"bash","code":"echo hi"}`)
	var res result
	if status != 503 || json.Unmarshal(body, &res) != nil || !strings.Contains(res.Error, "stopped answering") || strings.Contains(res.Error, "\n") {
		t.Errorf("with containerd gone: %d %s", status, body)
	}
	restartContainerd(t)
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, _, body = s.post(t, `{"lang":"bash","code":"echo hi"}`)
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server does not run again once containerd is back: %d %s", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.stop(t)
	assertClean(t)
}

// TestFaultNoContainerd gives boxer a containerd address where nothing
// answers: no socket at all, and a socket nobody listens on.
func TestFaultNoContainerd(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sock")
	start := time.Now()
	r := boxer(t, nil, "--address", missing, "run", "--lang", "bash", "-c", "true")
	oneLineFault(t, r, "no containerd socket at "+missing, "--address")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s to say so", took)
	}
	// A socket file left by a containerd that is gone: connections are refused.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	must(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	must(t, ln.Close())
	r = boxer(t, nil, "--address", stale, "run", "--lang", "bash", "-c", "true")
	oneLineFault(t, r, "nothing answers on containerd's socket "+stale)
	assertClean(t)
}

// tinyTmpfs mounts a tmpfs of size bytes on a new directory, unmounted when
// the test ends (not nodev: debootstrap refuses such a target).
func tinyTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	must(t, unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID, "size="+strconv.Itoa(size)))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestFaultCopyOutDiskFull copies out more than the destination holds: one
// line naming the directory, the files that fit whole, no half-written one.
func TestFaultCopyOutDiskFull(t *testing.T) {
	dst := tinyTmpfs(t, 1<<20)
	code := `
open("/workspace/a-small.txt", "w").write("fits\n")
open("/workspace/b-big.bin", "wb").write(b"x" * (4 << 20))
print("wrote")`
	r := boxer(t, nil, "run", "--lang", "python", "--copy-out", dst, "-c", code)
	oneLineFault(t, r, "no space left on device copying /workspace out to "+dst, "b-big.bin did not fit", "free space")
	if r.stdout != "wrote\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "a-small.txt")); err != nil || string(data) != "fits\n" {
		t.Errorf("the file that fits: %q %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "b-big.bin")); !os.IsNotExist(err) {
		t.Errorf("a half-written b-big.bin is left: %v", err)
	}
	assertClean(t)
}

// TestFaultImageBuildDiskFull builds an image with the layer cache on a
// filesystem too small for it: debootstrap's first download, from a mirror
// on loopback that answers every path with 4 MiB, fills the 2 MiB cache
// (debootstrap itself only says the download failed). One line about the
// cache and BOXER_CACHE, and no build directory or mount left in it.
func TestFaultImageBuildDiskFull(t *testing.T) {
	cache := tinyTmpfs(t, 2<<20)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	big := bytes.Repeat([]byte("x"), 4<<20)
	mirror := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(big) })}
	go func() { _ = mirror.Serve(ln) }()
	defer mirror.Close()
	r := boxer(t, []string{"BOXER_CACHE=" + cache}, "--debug", "image", "build", "--packages", "python3", "--mirror", "http://"+ln.Addr().String()+"/debian", "bt-nospace")
	t.Logf("boxer image build:\n%s", r.stderr)
	if strings.Contains(r.stderr, "nodev") {
		t.Fatal("debootstrap refused the cache's mount, it never filled it")
	}
	lastLineFault(t, r, "no space left in the layer cache "+cache, "BOXER_CACHE")
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		t.Errorf("left in the cache: %s", e.Name())
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	if n := strings.Count(string(mounts), cache+"/"); n > 0 {
		t.Errorf("%d mounts left under the cache", n)
	}
	assertClean(t)
}

// TestFaultImageMissing runs an image that is not there.
func TestFaultImageMissing(t *testing.T) {
	r := boxer(t, nil, "run", "--image", "boxer/not-there", "--", "true")
	oneLineFault(t, r, "image boxer/not-there not found", "boxer image build")
	assertClean(t)
}
