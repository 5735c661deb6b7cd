package warm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
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
func (w *Warm) StandbyMakerLock(ctx context.Context, req contract.Request) *os.File {
	req, err := req.Normalize()
	if err != nil || !contract.StandbyEligible(req) {
		return nil
	}
	key := contract.StandbyKey(req)
	f, err := lockFile(filepath.Join(w.StateDir, "standby", w.Namespace+"-"+key+".lock"))
	if err != nil {
		if !errors.Is(err, unix.EWOULDBLOCK) {
			log.G(ctx).WithError(err).Debug("taking the standby maker lock")
		}
		return nil
	}
	mine, all, err := w.standbys(ctx, key)
	if err != nil || mine >= contract.StandbyPerShape || all >= contract.StandbyTotal {
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

// A maker that slept until its standby's expiry, though a run had claimed
// it long before, stayed a process (about 5 MiB of private memory) for
// every run made meanwhile: 24 of them after 38 runs in two minutes (issue
// 42). So the claim wakes it: the standby's run directory holds a FIFO,
// made before the standby can be claimed, which the maker holds open for
// reading and writing (its own writer keeps a read waiting instead of
// seeing end of file) and into which the run that claimed it writes a
// byte, once the run directory is the run's. The maker then finds that
// the directory's owner is no longer itself and exits. It waits in Go's
// poller: no CPU while it sleeps, and no inotify instance, which every
// process of host root shares.

// standbyWake, in a standby's run directory, is the FIFO that wakes its
// maker when a run claims it.
const standbyWake = "standby-wake"

// wakeMaker tells the maker of the standby in runDir, which a run has just
// adopted, that it is claimed. No maker reading (it died, or has not
// opened the FIFO yet and will see the new owner once it has): nothing to
// wake.
func wakeMaker(runDir string) {
	fd, err := unix.Open(filepath.Join(runDir, standbyWake), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_, _ = unix.Write(fd, []byte{1})
	unix.Close(fd)
}

// WaitStandby waits while standby id is this process's, until its
// expiry or ctx's end: claimed is true when a run has claimed it (its run
// directory is the run's), and the maker has nothing left to do;
// otherwise the caller removes it (ExpireStandby), unless a run took it
// meanwhile. It needs no connection to containerd: it may be called after
// Close.
func (w *Warm) WaitStandby(ctx context.Context, id string, until time.Time) (claimed bool, err error) {
	dir := filepath.Join(w.RunsDir, id)
	self := reaper.Self()
	fd, err := unix.Open(filepath.Join(dir, standbyWake), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return false, fmt.Errorf("opening standby %s's wake FIFO: %w", id, err)
	}
	woke := make(chan struct{}, 1)
	if err == nil {
		// A non-blocking descriptor: reads wait in Go's poller, and Close
		// ends the one under way.
		f := os.NewFile(uintptr(fd), standbyWake)
		defer f.Close()
		go func() {
			buf := make([]byte, 64)
			for {
				_, err := f.Read(buf)
				select {
				case woke <- struct{}{}:
				default:
				}
				if err != nil {
					return
				}
			}
		}()
	}
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	// The owner is read after the FIFO is open: a run that adopted the
	// standby before found no reader to wake, but its owner is seen here.
	for {
		switch owner := reaper.RunDirOwner(dir); owner {
		case self:
		case "":
			// Its directory is gone (removed, or never made): the
			// caller finds out what became of the standby.
			return false, nil
		default:
			return true, nil
		}
		select {
		case <-woke:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, nil
		}
	}
}
