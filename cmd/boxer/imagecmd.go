package main

import (
	"io"

	"github.com/boxer-dev/boxer/cmd/boxer/imagecmd"
	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// images are the image commands (package imagecmd) with what they share
// with boxer's other commands.
var images = imagecmd.Env{
	Connect: func(c *cli.Context, progress io.Writer, reap bool) (*runner.Runner, error) {
		return connect(c, progress, reap)
	},
	Fail:       fail,
	HostFault:  hostFault,
	UsageError: usageError,
	IsTerminal: isTerminal,
}
