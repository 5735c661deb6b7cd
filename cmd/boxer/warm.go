package main

import (
	"errors"
	"strings"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// warmFlags are the pre-created sandbox flags of serve and mcp; size is the
// default number per language.
func warmFlags(size int) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "warm", Value: "python", Usage: "languages to keep pre-created sandboxes of, comma-separated: LANG on runc, LANG:runsc on gVisor, either with :net for requests with allow_hosts (needs --allow-host); empty for none"},
		&cli.IntFlag{Name: "warm-size", Value: size, Usage: "pre-created sandboxes per warm language"},
		preloadFlag(),
	}
}

// startWarm starts the pre-created sandboxes the warm flags ask for, shaped
// for requests bound by max.
func startWarm(c *cli.Context, r *runner.Runner, max runner.Maxima) error {
	var warm []string
	for _, l := range strings.Split(c.String("warm"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			warm = append(warm, l)
		}
	}
	if err := r.StartPool(c.Context, warm, c.Int("warm-size"), max); err != nil {
		var fe *runner.FieldError
		if errors.As(err, &fe) {
			return fail("--warm: %s", fe.Render(nil))
		}
		return fail("--warm: %v", err)
	}
	return nil
}

// shimFlags are the shared shim flags of serve and mcp.
func shimFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "shared-shims", Value: 2, Usage: "containerd shims that runc sandboxes share, in turn, instead of starting one each (containerd 2.x); 0 for a shim each"},
		&cli.IntFlag{Name: "shim-runs", Value: runner.DefaultShimRuns, Usage: "sandboxes a shared shim serves before a new one replaces it"},
	}
}

// shimOptions reads the shared shim flags into the Runner's options.
func shimOptions(c *cli.Context) (func(*runner.Options), error) {
	k, n := c.Int("shared-shims"), c.Int("shim-runs")
	if k < 0 || n < 1 {
		return nil, fail("--shared-shims must not be negative and --shim-runs must be at least 1")
	}
	return func(o *runner.Options) { o.SharedShims, o.ShimRuns = k, n }, nil
}
