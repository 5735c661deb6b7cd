package main

import (
	"errors"
	"os"
	"strings"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// Preloaded interpreters (docs/reference.md): the operator's module lists
// for the sandboxes made ahead of their program (serve's and mcp's warm
// ones, run's standbys), and a run's opt-out.

// preloadEnv gives run's --preload entries, separated by semicolons:
// BOXER_PRELOAD='python-data=numpy,pandas;python=json'.
const preloadEnv = "BOXER_PRELOAD"

// preloadFlag is the operator's --preload of serve, mcp and run.
func preloadFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "preload", Usage: "modules a pre-created " + strings.Join(preloadableLangs(), " or ") + " sandbox imports before its program is known: `LANG=MODULE,MODULE` (repeatable; LANG= for none; default: the preset's list)"}
}

// preloadableLangs are the presets whose interpreter can be preloaded.
func preloadableLangs() []string {
	var out []string
	for _, n := range runner.PresetNames() {
		if runner.Preloadable(n) {
			out = append(out, n)
		}
	}
	return out
}

// preloads reads --preload, and for run (env) BOXER_PRELOAD under it.
func preloads(c *cli.Context, env bool) (runner.Preloads, error) {
	var entries []string
	if v := os.Getenv(preloadEnv); env && v != "" {
		for _, e := range strings.Split(v, ";") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	p, err := runner.ParsePreloads(append(entries, c.StringSlice("preload")...))
	if err != nil {
		var fe *runner.FieldError
		if errors.As(err, &fe) {
			return nil, fail("--preload: %s", fe.Message)
		}
		return nil, fail("--preload: %v", err)
	}
	return p, nil
}
