// Package imagecmd is boxer's image command (image build, import, pull,
// ls, rm, prune): a *cli.Command that package main adds to boxer's, with
// the same flags, messages and exit codes as each of boxer's commands.
// What all of boxer's commands share (reaching containerd, one-line
// exit-125 errors, usage errors) it takes from main as an Env.
//
// It builds on packages snapshots, imagebuild and runner, and must never
// import package server, e2b or fleet: the CLI build (boxer_cli) has
// none of them.
package imagecmd

import (
	"io"
	"os"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// Env is what the image commands take from the boxer command they are
// part of.
type Env struct {
	// Connect returns a Runner on the containerd the global flags select.
	Connect func(c *cli.Context, progress io.Writer, reap bool) (*runner.Runner, error)
	// Fail is a one-line error that exits 125.
	Fail func(format string, args ...any) error
	// HostFault is exit 125 with a host fault's one line.
	HostFault func(err error) error
	// UsageError says what is wrong with a command line, in one line.
	UsageError cli.OnUsageErrorFunc
	// IsTerminal says whether f is a terminal.
	IsTerminal func(f *os.File) bool
}
