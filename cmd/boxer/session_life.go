package main

// A session's life from the CLI: pause, resume, its time left, its figures.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

func sessionPauseCommand() *cli.Command {
	return &cli.Command{
		Name:  "pause",
		Usage: "freeze sessions: their processes keep their state and use no CPU, their idle clock stops (their lifetime does not)",
		Description: `A pause waits for a call under way to end. Calls and file copies are refused
until 'boxer session resume ID'.`,
		ArgsUsage: "ID...",
		Action: func(c *cli.Context) error {
			return sessionEach(c, "pause", func(r *runner.Runner, id string) error {
				_, err := r.PauseSession(c.Context, id, "")
				return err
			})
		},
	}
}

func sessionResumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "thaw paused sessions: their processes go on from where they were, their idle clock starts again",
		ArgsUsage: "ID...",
		Action: func(c *cli.Context) error {
			return sessionEach(c, "resume", func(r *runner.Runner, id string) error {
				_, err := r.ResumeSession(c.Context, id, "")
				return err
			})
		},
	}
}

// sessionEach does one thing to each session named, and says which failed.
func sessionEach(c *cli.Context, verb string, do func(*runner.Runner, string) error) error {
	if c.NArg() == 0 {
		return fail("session %s needs at least one session ID (see 'boxer session ls')", verb)
	}
	r, err := connect(c, os.Stderr, true)
	if err != nil {
		return err
	}
	defer r.Close()
	var errs []string
	for _, id := range c.Args().Slice() {
		if err := do(r, id); errors.Is(err, runner.ErrSessionNotFound) {
			errs = append(errs, sessionError(id, err).Error())
		} else if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fail("%s", strings.Join(errs, "; "))
	}
	return nil
}

func sessionTimeoutCommand() *cli.Command {
	return &cli.Command{
		Name:  "timeout",
		Usage: "set the time a session has left: it ends DURATION from now, earlier or later than it would have",
		Description: `The session may live at most 24h after it started (serve's and mcp's
--max-session-lifetime for theirs). It prints when the session now ends.`,
		ArgsUsage:    "ID DURATION",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fail("session timeout needs ID and DURATION, like 'boxer session timeout bxs-0123456789abcdef 30m'")
			}
			id := c.Args().Get(0)
			d, err := time.ParseDuration(c.Args().Get(1))
			if err != nil || d <= 0 {
				return fail("session timeout: DURATION must be a positive duration, like 30m or 2h, not %q", c.Args().Get(1))
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			s, err := r.SetSessionTimeout(c.Context, id, "", d, runner.SessionMaxima{})
			switch {
			case errors.Is(err, runner.ErrSessionNotFound):
				return fail("%v", sessionError(id, err))
			case err != nil:
				return fail("%v", err)
			}
			fmt.Println(s.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		},
	}
}

func sessionStatsCommand() *cli.Command {
	return &cli.Command{
		Name:         "stats",
		Usage:        "print a session's figures: CPU time, memory now and at its peak, /workspace used, network",
		ArgsUsage:    "ID",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the figures as JSON"}},
		Action: withSession(func(c *cli.Context, r *runner.Runner, id string) error {
			st, err := r.SessionStats(c.Context, id, "")
			switch {
			case errors.Is(err, runner.ErrSessionNotFound):
				return fail("%v", sessionError(id, err))
			case err != nil:
				return requestError(err)
			}
			if c.Bool("json") {
				return json.NewEncoder(os.Stdout).Encode(st)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			state := "running"
			if st.Checkpointed {
				state = "checkpointed (saved to disk; resume restores it)"
			} else if st.Paused {
				state = "paused"
			}
			network := "none (made without --allow-host)"
			if st.Network != nil {
				network = fmt.Sprintf("%s sent, %s received", units.BytesSize(float64(st.Network.SentBytes)), units.BytesSize(float64(st.Network.ReceivedBytes)))
			}
			fmt.Fprintf(w, "state\t%s\n", state)
			fmt.Fprintf(w, "cpu time\t%s\n", time.Duration(st.CPUTimeMs*float64(time.Millisecond)).Round(time.Millisecond))
			fmt.Fprintf(w, "memory\t%s (peak %s, limit %s)\n", units.BytesSize(float64(st.MemoryBytes)), units.BytesSize(float64(st.MemoryPeakBytes)), units.BytesSize(float64(st.MemoryLimitBytes)))
			fmt.Fprintf(w, "workspace\t%s of %s\n", units.BytesSize(float64(st.DiskUsedBytes)), units.BytesSize(float64(st.DiskLimitBytes)))
			fmt.Fprintf(w, "network\t%s\n", network)
			return w.Flush()
		}),
	}
}
