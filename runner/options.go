package runner

import (
	"io"

	"github.com/boxer-dev/boxer/daemon"
)

// Options say how a Runner reaches containerd.
type Options struct {
	// Address of containerd; empty means the embedded default (see daemon).
	Address string
	// Namespace keeps boxer's objects apart; default "boxer".
	Namespace string
	// Daemon locates boxer's state and the private containerd.
	Daemon daemon.Config
	// Progress hears about slow steps (starting containerd); may be nil.
	Progress io.Writer
	// Reap starts a pass over the sandboxes of boxer processes that died
	// (see the reaper package); Close waits for it. Commands that make
	// sandboxes set it; a client that only manages images does not.
	Reap bool
}
