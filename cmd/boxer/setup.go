package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/boxer-dev/boxer/cmd/boxer/imagecmd"
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
		}, imagecmd.DebianFlags()...),
		Action: func(c *cli.Context) error {
			presets := runner.Presets()
			if l := c.String("lang"); l != "" {
				p, err := runner.LookupPreset(l)
				if err != nil {
					return requestError(err)
				}
				presets = []runner.Preset{p}
			}
			done := map[string]bool{}
			for _, p := range presets {
				// Several presets may share an image (javascript, typescript).
				if done[p.Image] {
					continue
				}
				done[p.Image] = true
				fmt.Fprintf(os.Stderr, "boxer: setting up %s (%s)\n", p.Name, p.Image)
				if err := images.BuildImage(c, snapshots.BuildOptions{
					Name:     p.Image,
					Packages: p.Packages,
					Suite:    c.String("suite"),
					Mirror:   c.String("mirror"),
				}); err != nil {
					return err
				}
			}
			fmt.Fprintln(os.Stderr, "boxer: ready: try "+tryCommand(presets[0]))
			return nil
		},
	}
}

// tryCommand is the first command to try with a preset: its own example,
// quoted for a POSIX shell.
func tryCommand(p runner.Preset) string {
	return "boxer run --lang " + p.Name + " -c '" + strings.ReplaceAll(p.Example, "'", `'\''`) + "'"
}
