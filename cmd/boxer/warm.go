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
