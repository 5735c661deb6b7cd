package main

// A gVisor session's checkpoints from the CLI: to disk and back, forks.

import (
	"errors"
	"fmt"
	"os"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

func sessionCheckpointCommand() *cli.Command {
	return &cli.Command{
		Name:  "checkpoint",
		Usage: "save gVisor sessions to disk and end their sandboxes, freeing their memory; 'resume' restores them",
		Description: `The interpreter's state (variables, imported modules) goes to an image under
boxer's root; the session's files stay where they are. Only python and
python-data sessions on gVisor (--runtime runsc) without network or secrets,
and with no process started by 'session exec' still running, can be
checkpointed: gVisor ends such processes at a restore, and runc would need
CRIU. Calls and file copies are refused until 'boxer session resume ID'.`,
		ArgsUsage: "ID...",
		Action: func(c *cli.Context) error {
			return sessionEach(c, "checkpoint", func(r *runner.Runner, id string) error {
				_, err := r.CheckpointSession(c.Context, id, "")
				return err
			})
		},
	}
}

func sessionForkCommand() *cli.Command {
	return &cli.Command{
		Name:  "fork",
		Usage: "make new sessions from a gVisor session's state: its variables and a copy of its files; prints their IDs",
		Description: `Each new session is restored from the session's checkpoint (one taken for
the fork, the session paused for a moment, when it is not checkpointed) and
shares nothing with it or the others after. Each has the session's time
left. The same sessions can be forked as checkpointed.`,
		ArgsUsage:    "ID",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Value: 1, Usage: fmt.Sprintf("how many sessions to make, 1 to %d", runner.MaxForks)},
		},
		Action: withSession(func(c *cli.Context, r *runner.Runner, id string) error {
			forks, err := r.ForkSession(c.Context, id, "", c.Int("count"), false, runner.SessionMaxima{})
			switch {
			case errors.Is(err, runner.ErrSessionNotFound):
				return fail("%v", sessionError(id, err))
			case err != nil:
				return requestError(err)
			}
			for _, f := range forks {
				fmt.Fprintln(os.Stdout, f.ID)
			}
			return nil
		}),
	}
}
