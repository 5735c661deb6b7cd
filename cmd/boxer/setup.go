package main

import (
	"fmt"
	"os"

	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/snapshots"
	"github.com/urfave/cli/v2"
)

func setupCommand() *cli.Command {
	return &cli.Command{
		Name:         "setup",
		Usage:        "make containerd reachable and build the images of the language presets",
		OnUsageError: usageError,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "lang", Usage: "set up only this language"},
		}, debianFlags()...),
		Action: func(c *cli.Context) error {
			langs := runner.PresetNames()
			if l := c.String("lang"); l != "" {
				if _, ok := runner.Presets[l]; !ok {
					return fail("unknown language %q: use one of %v", l, langs)
				}
				langs = []string{l}
			}
			done := map[string]bool{}
			for _, l := range langs {
				p := runner.Presets[l]
				// Several presets may share an image (javascript, typescript).
				if done[p.Image] {
					continue
				}
				done[p.Image] = true
				fmt.Fprintf(os.Stderr, "boxer: setting up %s (%s)\n", l, p.Image)
				if err := buildImage(c, snapshots.BuildOptions{
					Name:     p.Image,
					Packages: p.Packages,
					Suite:    c.String("suite"),
					Mirror:   c.String("mirror"),
				}); err != nil {
					return err
				}
			}
			fmt.Fprintf(os.Stderr, "boxer: ready: try boxer run --lang %s -c 'print(1)'\n", langs[0])
			return nil
		},
	}
}
