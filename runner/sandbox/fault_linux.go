package sandbox

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/containerd/log"
)

// Fault turns a host failure found in err into one line that says what
// happened and what to do (docs/reference.md, "When the host fails"); any
// other error is returned as it is. The chain under it goes to the debug
// log.
func (r *Host) Fault(ctx context.Context, err error) error {
	if err == nil || fault.Is(err) || errors.Is(err, contract.ErrInterrupted) {
		return err
	}
	var f *fault.Error
	switch path, full := fault.NoSpace(err); {
	case fault.ContainerdGone(err):
		f = r.containerdGone(err)
	case full:
		f = &fault.Error{What: "no space left on device", Do: "free space on that filesystem and run again", Err: err}
		if path != "" {
			f.What += " writing " + path
		}
	default:
		return err
	}
	log.G(ctx).WithError(err).Debug(f.What)
	return f
}

// containerdGone is the fault of a containerd that went away: its socket
// gone, or nothing answering on it. boxer's private daemon comes back by
// itself; a host's own does not.
func (r *Host) containerdGone(err error) *fault.Error {
	sock := strings.TrimPrefix(r.Address, "unix://")
	f := &fault.Error{What: "containerd at " + sock + " stopped answering", Err: err}
	if socketGone(sock) {
		f.What = "containerd's socket " + sock + " is gone"
	}
	if r.Private {
		f.Do = "any boxer command (or 'boxer containerd start') starts it again, and the next one removes what is left of this run; run again"
	} else {
		f.Do = "start containerd again (e.g. systemctl restart containerd) and run again; the next boxer command removes what is left of this run"
	}
	return f
}

// NoContainerd is the fault of an address given by the caller (--address,
// BOXER_ADDRESS) that nothing answers on.
func NoContainerd(address string) *fault.Error {
	sock := strings.TrimPrefix(address, "unix://")
	f := &fault.Error{What: "nothing answers on containerd's socket " + sock, Do: "start containerd, or point --address (BOXER_ADDRESS) at its socket; 'boxer doctor' checks the host"}
	if socketGone(sock) {
		f.What = "no containerd socket at " + sock
	}
	return f
}

// socketGone says whether nothing is at the socket's path any more.
func socketGone(sock string) bool {
	_, err := os.Stat(sock)
	return errors.Is(err, os.ErrNotExist)
}
