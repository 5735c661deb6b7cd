// Package fault names failures of the host, not of a request: containerd
// gone, a full disk, a missing cgroup controller. Each is one line that
// says what happened and what to do about it; the chain of wrapped errors
// under it stays for logs and --debug, and out of the user's way.
package fault

import (
	"errors"
	"io/fs"
	"net"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a host failure: What happened and what to Do, and the error it
// was found in.
type Error struct {
	What string
	Do   string
	Err  error
}

func (e *Error) Error() string { return e.What + ": " + e.Do }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Cause returns the error e was found in, as one line, for --debug.
func (e *Error) Cause() string {
	if e.Err == nil {
		return ""
	}
	return strings.Join(strings.Fields(e.Err.Error()), " ")
}

// Is reports whether err is, or wraps, a fault.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// ContainerdGone reports whether err says that containerd could not be
// reached or dropped the connection: gRPC's Unavailable (the client's own
// code for a refused, reset or closed connection, and for a dial that
// timed out), containerd's errdefs.ErrUnavailable, or a refused or missing
// socket.
func ContainerdGone(err error) bool {
	if err == nil {
		return false
	}
	if errdefs.IsUnavailable(err) {
		return true
	}
	for e := err; e != nil; {
		if s, ok := status.FromError(e); ok && s.Code() == codes.Unavailable {
			return true
		}
		if u, ok := e.(interface{ Unwrap() error }); ok {
			e = u.Unwrap()
			continue
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				if ContainerdGone(x) {
					return true
				}
			}
		}
		break
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && (errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT))
}

// NoSpace reports whether err is a write that found its filesystem full
// (ENOSPC) or its quota used up (EDQUOT), and the path it was writing when
// the error names one.
func NoSpace(err error) (path string, ok bool) {
	if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return "", false
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		path = pe.Path
	}
	return path, true
}
