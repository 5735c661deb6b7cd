package main

// The ready session flags of serve and mcp.

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// readyFlags are the ready session flags of serve and mcp.
func readyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "ready-sessions", Value: 0, Usage: "sessions to keep made and preloaded ahead of requests, per --ready language: a matching create takes one at once (each serves one caller)"},
		&cli.StringFlag{Name: "ready", Usage: "languages of the ready sessions, comma-separated: LANG on the default runtime, LANG:RUNTIME on another (default: those of --warm, and python-data)"},
		&cli.DurationFlag{Name: "ready-max-age", Value: runner.DefaultReadyMaxAge, Usage: "replace a ready session no request took after this long (under gVisor a session's uptime counts from when it was made)"},
	}
}

// startReady starts the ready sessions the flags ask for, shaped for
// session requests bound by max and smax; an entry without a runtime is
// on runtime.
func startReady(c *cli.Context, r *runner.Runner, max runner.Maxima, smax runner.SessionMaxima, runtime string) error {
	n := c.Int("ready-sessions")
	if n < 0 {
		return fail("--ready-sessions must not be negative")
	}
	if c.Duration("ready-max-age") < time.Second {
		return fail("--ready-max-age must be at least 1s")
	}
	var langs []string
	if c.IsSet("ready") {
		langs = strings.Split(c.String("ready"), ",")
	} else {
		// The warm languages, whose first run is fast already, and the
		// one whose first import costs a second.
		for _, l := range append(strings.Split(c.String("warm"), ","), "python-data") {
			if !strings.HasSuffix(l, ":net") {
				langs = append(langs, l)
			}
		}
	}
	var entries []string
	for _, l := range langs {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if runtime != "" && !strings.Contains(l, ":") {
			l += ":" + runtime
		}
		if !slices.Contains(entries, l) {
			entries = append(entries, l)
		}
	}
	if err := r.StartReadySessions(c.Context, entries, n, c.Duration("ready-max-age"), max, smax); err != nil {
		var fe *runner.FieldError
		if errors.As(err, &fe) {
			return fail("--ready: %s", fe.Render(nil))
		}
		return fail("--ready: %v", err)
	}
	return nil
}
