package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestContainerdGone(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "error reading from server: EOF")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"grpc unavailable", unavailable, true},
		{"wrapped", fmt.Errorf("waiting for sandbox exit: %w", unavailable), true},
		{"joined", errors.Join(errors.New("removing run directory"), fmt.Errorf("deleting task: %w", unavailable)), true},
		{"errdefs", fmt.Errorf("listing: %w", errdefs.ErrUnavailable), true},
		{"refused", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"no socket", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ENOENT)}, true},
		{"not found", status.Error(codes.NotFound, "container bx-1: not found"), false},
		{"plain", errors.New("creating container: exec format error"), false},
		{"read refused", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{"nil", nil, false},
	} {
		if got := ContainerdGone(tc.err); got != tc.want {
			t.Errorf("%s: ContainerdGone(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestNoSpace(t *testing.T) {
	err := fmt.Errorf("writing code: %w", &fs.PathError{Op: "write", Path: "/run/boxer/runs/bx-1/code/main.py", Err: syscall.ENOSPC})
	if path, ok := NoSpace(err); !ok || path != "/run/boxer/runs/bx-1/code/main.py" {
		t.Errorf("NoSpace = %q, %v", path, ok)
	}
	if _, ok := NoSpace(&fs.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}); !ok {
		t.Error("EDQUOT is no space too")
	}
	if _, ok := NoSpace(&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}); ok {
		t.Error("EACCES is not no space")
	}
}

func TestErrorIsOneLine(t *testing.T) {
	f := &Error{What: "containerd at /run/c.sock stopped answering", Do: "run again", Err: errors.New("a\nb  c")}
	var err error = fmt.Errorf("run: %w", f)
	if !Is(err) || f.Error() != "containerd at /run/c.sock stopped answering: run again" || f.Cause() != "a b c" {
		t.Errorf("Error() = %q, Cause() = %q, Is = %v", f.Error(), f.Cause(), Is(err))
	}
	if Is(errors.New("x")) {
		t.Error("a plain error is not a fault")
	}
}
