package sandbox

// Opening what a sandbox may have planted, from the host, without ever waiting on it.

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"github.com/boxer-dev/boxer/runner/contract"
	"golang.org/x/sys/unix"
)

// OpenRegular opens rel of root (abs in the sandbox, named by field in
// the caller's request) for flag, and refuses it unless it is a regular
// file once open (fstat): a directory is EISDIR, anything else a
// PathError of ErrNotRegular. The open itself never waits: O_NONBLOCK
// makes a FIFO open at once for reading, and fail with ENXIO for writing
// when nobody reads it (without it the thread waits in openat until
// someone opens the other end, for good if nobody does); a socket fails
// with ENXIO, a file under a lease with EWOULDBLOCK instead of waiting
// for the lease's break. O_NOCTTY: a terminal is never the server's.
func OpenRegular(root *os.Root, field, rel, abs string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := root.OpenFile(rel, flag|unix.O_NONBLOCK|unix.O_NOCTTY, perm)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			// Refused for what it is (ENXIO, EACCES on a device of a
			// nodev mount): say so. Stat does not open it.
			if st, serr := root.Stat(rel); serr == nil && !st.Mode().IsRegular() && !st.IsDir() {
				return nil, notRegular(field, abs, st.Mode())
			}
		}
		return nil, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case st.IsDir():
		err = &fs.PathError{Op: "open", Path: rel, Err: unix.EISDIR}
	case !st.Mode().IsRegular():
		err = notRegular(field, abs, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenDirRoot opens the directory rel of root as a root of its own. Not
// root.OpenRoot, which opens the last name without O_DIRECTORY and so
// would wait on a FIFO the sandbox put in the directory's place: the
// directory is opened with O_DIRECTORY, which opens nothing else, and
// becomes a root through its descriptor (the same directory, whatever
// is renamed meanwhile).
func OpenDirRoot(root *os.Root, rel string) (*os.Root, error) {
	d, err := root.OpenFile(rel, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(d.Fd())))
}

// notRegular is the refusal of abs, which mode says is no regular file.
func notRegular(field, abs string, mode fs.FileMode) *contract.PathError {
	t := "device"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		t = "FIFO"
	case mode&fs.ModeSocket != 0:
		t = "socket"
	case mode&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return &contract.PathError{Field: field, Path: contract.CutPath(abs), Err: contract.ErrNotRegular, Type: t}
}
