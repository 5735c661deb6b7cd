package session

// Opening what a sandbox may have planted: FIFOs, sockets, symlinks to them; a path refused, told.

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"golang.org/x/sys/unix"
)

// TestOpenPlanted: what a sandbox can plant where the host opens a file
// or a directory (a FIFO nobody reads, a socket, a symlink to either) is
// refused at once, by type, for reading and for writing.
func TestOpenPlanted(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(err)
	defer ln.Close()
	must(os.Symlink("fifo", filepath.Join(dir, "link")))
	must(os.Mkdir(filepath.Join(dir, "d"), 0o755))
	root, err := os.OpenRoot(dir)
	must(err)
	defer root.Close()
	tests := []struct {
		name, rel, typ string
		flag           int
	}{
		{"read a FIFO", "fifo", "FIFO", os.O_RDONLY},
		{"write a FIFO", "fifo", "FIFO", os.O_WRONLY},
		{"create onto a FIFO", "fifo", "FIFO", os.O_WRONLY | os.O_CREATE},
		{"write a FIFO through a symlink", "link", "FIFO", os.O_WRONLY | os.O_CREATE},
		{"read a socket", "sock", "socket", os.O_RDONLY},
		{"write a socket", "sock", "socket", os.O_WRONLY},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, err := box.OpenRegular(root, contract.FieldPath, tc.rel, "/workspace/"+tc.rel, tc.flag, 0o644)
				if f != nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				var pe *contract.PathError
				if !errors.As(err, &pe) || !errors.Is(err, contract.ErrNotRegular) || !errors.Is(err, contract.ErrInvalid) || pe.Type != tc.typ {
					t.Fatalf("err = %v, want a PathError of a %s", err, tc.typ)
				}
				if want := "/workspace/" + tc.rel + " is a " + tc.typ + ", not a regular file"; !strings.HasPrefix(err.Error(), want) {
					t.Errorf("err = %q, want it to start %q", err, want)
				}
			case <-time.After(5 * time.Second):
				// The thread stays stuck: the test binary ends soon anyway.
				t.Fatal("the open waits")
			}
		})
	}
	if _, err := box.OpenRegular(root, contract.FieldPath, "d", "/workspace/d", os.O_RDONLY, 0); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("open a directory: %v, want EISDIR", err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := box.OpenDirRoot(root, "fifo")
		if r != nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("openDirRoot of a FIFO: %v, want ENOTDIR", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("openDirRoot of a FIFO waits")
	}
	sub, err := box.OpenDirRoot(root, "d")
	must(err)
	defer sub.Close()
	must(sub.WriteFile("f", []byte("x"), 0o644))
	if data, err := os.ReadFile(filepath.Join(dir, "d", "f")); err != nil || string(data) != "x" {
		t.Errorf("through openDirRoot: %q %v", data, err)
	}
}

// TestPathError: each kind is told in its caller's terms, a long path cut.
func TestPathError(t *testing.T) {
	long := "/workspace/" + strings.Repeat("é", 3000)
	tests := []struct {
		name     string
		err      *contract.PathError
		is, isnt error
		want     string
	}{
		{"not regular", &contract.PathError{Path: "/tmp/p", Err: contract.ErrNotRegular, Type: "FIFO"}, contract.ErrInvalid, contract.ErrFileNotFound, "/tmp/p is a FIFO, not a regular file"},
		{"too long", &contract.PathError{Path: contract.CutPath(long), Err: contract.ErrNameTooLong}, contract.ErrInvalid, contract.ErrFileNotFound, "/workspace/é"},
		{"leads out", &contract.PathError{Path: "/tmp/l/x", Err: contract.ErrLeadsOut}, contract.ErrFileNotFound, contract.ErrInvalid, "/tmp/l/x: no such file in the session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.is) || errors.Is(tc.err, tc.isnt) || !errors.Is(tc.err, tc.err.Err) {
				t.Errorf("%v: Is(%v) = %v, Is(%v) = %v", tc.err, tc.is, errors.Is(tc.err, tc.is), tc.isnt, errors.Is(tc.err, tc.isnt))
			}
			if msg := tc.err.Error(); !strings.HasPrefix(msg, tc.want) || len(msg) > 400 || !utf8Valid(msg) {
				t.Errorf("message = %q, want it to start %q, under 400 bytes, valid UTF-8", msg, tc.want)
			}
		})
	}
	if got := contract.CutPath("/tmp/short"); got != "/tmp/short" {
		t.Errorf("cutPath of a short path = %q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }
