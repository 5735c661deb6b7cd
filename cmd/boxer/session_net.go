package main

// A session's network from the CLI: what it did, and its allowlist.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

func sessionNetworkCommand() *cli.Command {
	return &cli.Command{
		Name:         "network",
		Usage:        "print what a session made with --allow-host did on the network: its allowlist, bytes, connections, what was refused",
		ArgsUsage:    "ID",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"}},
		Action: withSession(func(c *cli.Context, r *runner.Runner, id string) error {
			n, err := r.SessionNetwork(c.Context, id, "")
			if err != nil {
				return sessionNetError(id, err)
			}
			if c.Bool("json") {
				return json.NewEncoder(os.Stdout).Encode(n)
			}
			printNetwork(os.Stdout, n)
			return nil
		}),
	}
}

func sessionAllowCommand() *cli.Command {
	return &cli.Command{
		Name:  "allow",
		Usage: "replace a live session's allowlist (HOST[:PORT] as for --allow-host): new names and connections are checked against it",
		Description: `The session must have been made with --allow-host. Connections open stay
open; what the new list leaves out is refused from now on.`,
		ArgsUsage:    "ID HOST[:PORT]...",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the report under the new list as JSON"}},
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return fail("session allow needs ID and at least one HOST[:PORT], like 'boxer session allow bxs-0123456789abcdef pypi.org'")
			}
			id, hosts := c.Args().First(), c.Args().Tail()
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			// The CLI is root on the host: its own list bounds it.
			n, err := r.SetSessionAllow(c.Context, id, "", hosts, runner.Maxima{AllowHosts: hosts})
			if err != nil {
				return sessionNetError(id, err)
			}
			if c.Bool("json") {
				return json.NewEncoder(os.Stdout).Encode(n)
			}
			fmt.Println(strings.Join(n.Allowed, " "))
			return nil
		},
	}
}

// sessionNetError says what went wrong with a session's network.
func sessionNetError(id string, err error) error {
	switch {
	case errors.Is(err, runner.ErrSessionNotFound):
		return fail("%v", sessionError(id, err))
	case errors.Is(err, runner.ErrNoNetwork):
		return fail("session %s has no network: it was made without --allow-host (make a new one with --allow-host)", id)
	}
	return requestError(err)
}

// printNetwork writes a network report for people.
func printNetwork(w io.Writer, n egress.Report) {
	fmt.Fprintf(w, "allowed\t%s\n", strings.Join(n.Allowed, " "))
	fmt.Fprintf(w, "connections\t%d\n", n.Connections)
	fmt.Fprintf(w, "received\t%s\n", units.BytesSize(float64(n.BytesIn)))
	fmt.Fprintf(w, "sent\t%s\n", units.BytesSize(float64(n.BytesOut)))
	if n.QuotaExceeded {
		fmt.Fprintln(w, "quota\texceeded: connections closed")
	}
	for _, d := range n.Denied {
		fmt.Fprintf(w, "refused\t%s: %s\n", d.Destination, d.Reason)
	}
	if more := n.DeniedTotal - len(n.Denied); more > 0 {
		fmt.Fprintf(w, "refused\t%d more (--json lists the first %d)\n", more, len(n.Denied))
	}
}
