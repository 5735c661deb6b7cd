//go:build unix

package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadFileRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Spec{Name: "K", Source: Source{Kind: FromFile, Path: path}}.Load(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is a named pipe") {
			t.Errorf("Load(fifo) = %v, want an error containing %q", err, "is a named pipe")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Load(fifo) still waits after 10s")
	}
}

// script writes a shell script into a fresh temporary directory and
// returns the argv that runs it. It runs through /bin/sh rather than being
// executed itself: exec of a file just written may fail with ETXTBSY while
// other tests fork.
func script(t *testing.T, body string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "helper.sh")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatalf("writing script: %v", err)
	}
	return []string{"/bin/sh", path}
}

func TestLoadCmd(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    string
		wantErr string
		hidden  string // must not appear in the error
	}{
		{name: "trailing newline", body: "printf 'tok3n\\n'", want: "tok3n"},
		{name: "all line ends", body: "printf 'a b\\r\\n\\n\\r\\n'", want: "a b"},
		{name: "inner newline kept", body: "printf 'a\\nb\\n'", want: "a\nb"},
		{name: "lone CR kept", body: "printf 'a\\r'", want: "a\r"},
		{name: "no newline", body: "printf x", want: "x"},
		{name: "stderr ignored on success", body: "echo noise >&2; echo v", want: "v"},
		{name: "environment", body: "printf %s \"$BOXER_TEST_FROM_ENV\"", want: "env-value"},
		{name: "stdin is empty", body: "cat; printf done", want: "done"},
		{
			name:    "failure",
			body:    "echo partial-stdout-value; echo first >&2; echo '  permission denied  ' >&2; echo >&2; exit 3",
			wantErr: "exit status 3: permission denied",
			hidden:  "partial-stdout-value",
		},
		{name: "failure without stderr", body: "exit 2", wantErr: "helper.sh: exit status 2"},
		{name: "long stderr line", body: "printf '%0300d\\n' 0 >&2; exit 1", wantErr: "exit status 1: " + strings.Repeat("0", 200)},
		{name: "empty", body: "printf '\\n\\n'", wantErr: "secret K: the value is empty"},
		{name: "too long", body: fmt.Sprintf("head -c %d /dev/zero", MaxValueBytes+3), wantErr: "printed more than 64 KiB"},
		{name: "full size and newline", body: fmt.Sprintf("head -c %d /dev/zero; echo", MaxValueBytes), want: strings.Repeat("\x00", MaxValueBytes)},
	}
	t.Setenv("BOXER_TEST_FROM_ENV", "env-value")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Name: "K", Source: Source{Kind: FromCmd, Argv: script(t, tc.body)}}
			got, err := spec.Load(context.Background())
			checkLoad(t, got, err, tc.want, tc.wantErr)
			if err != nil && tc.hidden != "" && strings.Contains(err.Error(), tc.hidden) {
				t.Errorf("error %q holds the command's stdout", err)
			}
			if err != nil && strings.Contains(err.Error(), strings.Repeat("0", stderrLineMax+1)) {
				t.Errorf("error %q holds more than 200 bytes of stderr", err)
			}
		})
	}
}

func TestLoadCmdMessage(t *testing.T) {
	spec, err := ParseSpec("DB_PASS=cmd:/bin/sh -c 'echo permission denied >&2; exit 2'")
	if err != nil {
		t.Fatalf("ParseSpec: %v", err)
	}
	_, err = spec.Load(context.Background())
	want := "secret DB_PASS: /bin/sh -c echo permission denied >&2; exit 2: exit status 2: permission denied"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %q", err, want)
	}
	spec.Source.Argv = []string{"/nonexistent/helper"}
	if _, err := spec.Load(context.Background()); err == nil || !strings.Contains(err.Error(), "secret DB_PASS: /nonexistent/helper: ") {
		t.Errorf("Load(missing command) = %v, want an error naming the command", err)
	}
}

func TestLoadCmdTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	argv := append(script(t, "sleep 60 &\necho $! > \"$1\"\nwait\necho late\n"), pidFile)
	spec := Spec{Name: "K", Source: Source{Kind: FromCmd, Argv: argv}, Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := spec.Load(context.Background())
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Load took %s, want about 300ms", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") {
		t.Fatalf("Load = %v, want an error containing %q", err, "did not finish within 300ms")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("reading the child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child's pid %q: %v", b, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the script's child sleep (pid %d) still runs 5s after the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLoadCmdContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := Spec{Name: "K", Source: Source{Kind: FromCmd, Argv: script(t, "sleep 60")}}.Load(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Load = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Load took %s after its context ended", elapsed)
	}
}

// processGone reports whether pid has exited: it no longer exists, or it is
// a zombie nobody has reaped yet (in a container, PID 1 may never reap it).
func processGone(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
