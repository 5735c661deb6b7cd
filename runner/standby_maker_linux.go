package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/containerd/log"
	"golang.org/x/sys/unix"
)

// Runs at once (four CLIs of one shape) each used to start a maker, and
// three of four makers found the standby made or being made and only
// removed their run's sandbox: a boxer process, a connection and a
// reaper pass each, for what the run removes itself when cold (issue
// 29: 6.4 runs/s with standbys at four workers, 8.1 cold). So a run
// starts a maker only when it takes its shape's maker lock and finds no
// standby of its shape waiting; the maker holds the lock until its
// standby is made. The lock is an flock(2) on a file under the state
// directory: its open file goes to the maker (inherited), and it goes
// with the last process that holds it, however that process ends.

// StandbyMakerLock returns the maker lock of req's shape, taken, when a
// run of that shape should leave a standby: no maker holds the lock and
// no standby of the shape waits, and the caps leave room. The caller
// hands the file to the maker it starts (which holds it while it makes
// the standby) and closes its own copy. nil: the run leaves no standby,
// and its sandbox is removed by Close.
func (r *Runner) StandbyMakerLock(ctx context.Context, req Request) *os.File {
	req, err := req.Normalize()
	if err != nil || !StandbyEligible(req) {
		return nil
	}
	key := standbyKey(req)
	f, err := lockFile(filepath.Join(r.stateDir, "standby", r.namespace+"-"+key+".lock"))
	if err != nil {
		if !errors.Is(err, unix.EWOULDBLOCK) {
			log.G(ctx).WithError(err).Debug("taking the standby maker lock")
		}
		return nil
	}
	mine, all, err := r.standbys(ctx, key)
	if err != nil || mine >= StandbyPerShape || all >= StandbyTotal {
		f.Close()
		return nil
	}
	return f
}

// lockFile opens path, making it and its directory if missing, and takes
// an exclusive flock on it without waiting: EWOULDBLOCK when another
// open file holds it.
func lockFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
