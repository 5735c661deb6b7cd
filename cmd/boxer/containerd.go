package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/urfave/cli/v2"
)

func containerdCommand() *cli.Command {
	return &cli.Command{
		Name:         "containerd",
		Usage:        "report on, start and stop boxer's private containerd",
		OnUsageError: usageError,
		Subcommands: []*cli.Command{
			{
				Name:  "status",
				Usage: "say whether boxer's private containerd runs, and where",
				Action: func(c *cli.Context) error {
					cfg := daemon.FromEnv()
					st := daemon.GetStatus(cfg)
					if !st.Running {
						fmt.Printf("stopped  address=%s\n", st.Address)
						return &exitError{code: 3}
					}
					fmt.Printf("running  pid=%d address=%s root=%s\n", st.PID, st.Address, cfg.ContainerdRoot())
					return nil
				},
			},
			{
				Name:  "start",
				Usage: "start boxer's private containerd unless it runs",
				Action: func(c *cli.Context) error {
					cfg := daemon.FromEnv()
					ctx, cancel := context.WithTimeout(c.Context, time.Minute)
					defer cancel()
					if _, err := daemon.Ensure(ctx, cfg, os.Stderr); err != nil {
						return fail("starting containerd: %v", err)
					}
					st := daemon.GetStatus(cfg)
					fmt.Printf("running  pid=%d address=%s\n", st.PID, st.Address)
					return nil
				},
			},
			{
				Name:  "stop",
				Usage: "stop boxer's private containerd",
				Action: func(c *cli.Context) error {
					stopped, err := daemon.Stop(c.Context, daemon.FromEnv())
					if err != nil {
						return fail("stopping containerd: %v", err)
					}
					if stopped {
						fmt.Println("stopped")
					} else {
						fmt.Println("not running")
					}
					return nil
				},
			},
		},
	}
}
