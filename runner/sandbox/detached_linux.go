package sandbox

// A task's streams that no one in this process reads or writes (a
// standby's, a session's wire while its driver is made).

import (
	"fmt"

	"github.com/containerd/containerd/v2/pkg/cio"
	"golang.org/x/sys/unix"
)

// DetachedIO is a task's streams that no one in this process reads or
// writes: it only holds the readers the task's creation needs.
type DetachedIO struct {
	config cio.Config
	fds    []int
}

// NewDetachedIO makes the FIFOs fifos and holds open for reading those of
// them in hold: the shim's opens of its write ends wait for a reader.
func NewDetachedIO(config cio.Config, fifos, hold []string) (*DetachedIO, error) {
	for _, p := range fifos {
		if err := unix.Mkfifo(p, 0o600); err != nil {
			return nil, fmt.Errorf("making a sandbox's streams: %w", err)
		}
	}
	d := &DetachedIO{config: config}
	for _, p := range hold {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("opening a sandbox's streams: %w", err)
		}
		d.fds = append(d.fds, fd)
	}
	return d, nil
}

// Config is the streams' FIFOs.
func (d *DetachedIO) Config() cio.Config { return d.config }

// Cancel does nothing: no copy is under way.
func (d *DetachedIO) Cancel() {}

// Wait does nothing: no copy is under way.
func (d *DetachedIO) Wait() {}

// Close closes the readers it holds.
func (d *DetachedIO) Close() error {
	for _, fd := range d.fds {
		unix.Close(fd)
	}
	d.fds = nil
	return nil
}
