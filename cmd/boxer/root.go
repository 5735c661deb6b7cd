// boxer runs as root: it drives containerd and runc, which need it.
package main

import (
	"fmt"
	"os"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// asRoot runs action only as root: anyone else gets one line saying so,
// before the first socket or lock that would answer "permission denied".
func asRoot(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if uid := os.Geteuid(); uid != 0 {
			// The line names boxer itself: "boxer: boxer must..." would stutter.
			return &exitError{code: runner.ExitBoxer, msg: notRoot(c), bare: true}
		}
		return action(c)
	}
}

// notRoot says that boxer must run as root, and the command to try.
func notRoot(c *cli.Context) string {
	try := commandPath(c)
	if c.NArg() > 0 || len(c.LocalFlagNames()) > 0 {
		try += " …"
	}
	return fmt.Sprintf("boxer must run as root (it drives containerd and runc): try sudo %s", try)
}
