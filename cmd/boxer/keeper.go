package main

import (
	"github.com/urfave/cli/v2"
)

// keeperCommand is the detached process that holds a session's processes
// (runner.Runner.Keep): started by the first boxer command that needs it,
// not by people.
func keeperCommand() *cli.Command {
	return &cli.Command{
		Name:      "keeper",
		Hidden:    true,
		Usage:     "hold a session's processes and their output (boxer starts it)",
		ArgsUsage: "ID",
		Action: func(c *cli.Context) error {
			keeperGC()
			id, err := oneArg(c, "ID")
			if err != nil {
				return err
			}
			r, err := connect(c, nil, false)
			if err != nil {
				return err
			}
			defer r.Close()
			if err := r.Keep(c.Context, id); err != nil {
				return fail("keeper of %s: %v", id, err)
			}
			return nil
		},
	}
}

// keeperArgs is how this boxer starts a session's keeper: itself, with
// the global flags that chose its containerd.
func keeperArgs(c *cli.Context, self string) []string {
	args := []string{self, "--namespace", c.String("namespace")}
	if a := c.String("address"); a != "" {
		args = append(args, "--address", a)
	}
	if c.Bool("debug") {
		args = append(args, "--debug")
	}
	return args
}
