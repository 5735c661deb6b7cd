package main

import (
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/userns"
	"github.com/urfave/cli/v2"
)

// usernsFlag chooses runc sandboxes' user namespaces: a global flag, and
// serve's and mcp's own, so that it may follow those commands too.
func usernsFlag() cli.Flag {
	return &cli.StringFlag{Name: "userns", Usage: "`MODE` of runc sandboxes' user ids: private (the default: each sandbox maps its ids onto a block of host ids of its own) or host (all share the host's ids and per-user counters, as before user namespaces)", EnvVars: []string{"BOXER_USERNS"}}
}

// usernsOptions reads --userns (the nearest command's that is set, else the
// global one) and --userns-range.
func usernsOptions(c *cli.Context) (runner.UsernsOptions, error) {
	var mode string
	for _, l := range c.Lineage() {
		if mode = l.String("userns"); mode != "" {
			break
		}
	}
	o := runner.UsernsOptions{Range: c.String("userns-range")}
	switch mode {
	case "", "private":
	case "host":
		o.Host = true
	default:
		return o, fail("--userns %q: must be private or host (e.g. --userns=host)", mode)
	}
	if !o.Host {
		if _, err := userns.ParseRange(o.Range); err != nil {
			return o, fail("--userns-range: %v", err)
		}
	}
	return o, nil
}

// usernsRangeFlag is the global --userns-range.
func usernsRangeFlag() cli.Flag {
	return &cli.StringFlag{Name: "userns-range", Value: userns.DefaultRange, Usage: "host ids `START:COUNT` that runc sandboxes' user namespaces map onto, 65536 each (as in /etc/subuid)", EnvVars: []string{"BOXER_USERNS_RANGE"}}
}
