// What boxer says about a command line it cannot read: one line, with an
// example or the flag meant.
package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// usageError turns urfave/cli's usage errors into boxer's one-line, exit-125 errors.
func usageError(c *cli.Context, err error, _ bool) error {
	return &exitError{code: runner.ExitBoxer, msg: usageMessage(c, err)}
}

// The cli package's (and Go's flag package's) words for a bad flag.
var (
	notDefined   = "flag provided but not defined: -"
	needsValue   = "flag needs an argument: -"
	invalidValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): `)
)

// usageMessage says what is wrong with the command line c failed to read,
// and what to write instead.
func usageMessage(c *cli.Context, err error) string {
	var flags []cli.Flag
	if c.Command != nil {
		flags = c.Command.Flags
	}
	see := " (see '" + commandPath(c) + " --help')"
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, notDefined); ok {
		if near := nearestFlag(flags, name); near != "" {
			return fmt.Sprintf("unknown flag %s: did you mean %s?", dashed(name), dashed(near))
		}
		return "unknown flag " + dashed(name) + see
	}
	if name, ok := strings.CutPrefix(msg, needsValue); ok {
		return dashed(name) + " needs a value" + see
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		value, name := m[1], m[2]
		switch lookupFlag(flags, name).(type) {
		case *cli.DurationFlag:
			return durationHint(dashed(name), value)
		case *cli.IntFlag, *cli.Int64Flag:
			return fmt.Sprintf("%s %s: give a whole number, e.g. %s 256", dashed(name), value, dashed(name))
		case *cli.Float64Flag:
			return fmt.Sprintf("%s %s: give a number, e.g. %s 0.5 or %s 2", dashed(name), value, dashed(name), dashed(name))
		case *cli.BoolFlag:
			return fmt.Sprintf("%s takes no value: write %s alone, or %s=false", dashed(name), dashed(name), dashed(name))
		}
		return fmt.Sprintf("%s %s: not a valid value%s", dashed(name), value, see)
	}
	return msg + see
}

// durationHint says how to write a duration, from the one given: a bare
// number gets its unit asked for.
func durationHint(flag, value string) string {
	if isNumber(value) {
		return fmt.Sprintf("%s %s: give a unit, e.g. %ss, 500ms, 2m", flag, value, value)
	}
	return fmt.Sprintf("%s %s: not a duration: give one like 5s, 500ms, 2m or 1m30s", flag, value)
}

// isNumber reports whether s is a plain decimal number, like 5 or 1.5.
func isNumber(s string) bool {
	digits, dot := 0, false
	for _, ch := range s {
		switch {
		case ch >= '0' && ch <= '9':
			digits++
		case ch == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// dashed writes a flag's name as typed: -c, --lang.
func dashed(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// nearestFlag is the name of the flag in flags nearest to name: one that
// begins with it or that it begins with (--language for --lang), else the
// nearest by edit distance, if that is close enough to be a typo. It is
// empty when no flag is near.
func nearestFlag(flags []cli.Flag, name string) string {
	name = strings.ToLower(name)
	best, bestScore := "", -1
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) < 2 || n == "help" {
				continue
			}
			score := -1
			switch d := editDistance(name, n); {
			case d <= max(1, len(name)/3):
				score = d
			case len(name) >= 3 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)):
				// A prefix ranks after every typo: its distance is the
				// length of the part added or left out.
				score = 100 + d
			}
			if score >= 0 && (bestScore < 0 || score < bestScore) {
				best, bestScore = n, score
			}
		}
	}
	return best
}

// editDistance is the edit distance between a and b, a swap of two
// neighbours counting as one edit (--jsno for --json), as in the optimal
// string alignment distance.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// unknownCommand is the action of a command that has subcommands: given
// words, none of which is a subcommand, it names the nearest.
func unknownCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	name := c.Args().First()
	if name == "help" {
		// 'boxer help run' as 'boxer run --help'.
		if topic := c.Args().Get(1); topic != "" && c.Command != nil && findCommand(c.Command.Subcommands, topic) != nil {
			return cli.ShowCommandHelp(c, topic)
		}
		return cli.ShowSubcommandHelp(c)
	}
	var cmds []*cli.Command
	if c.Command != nil && len(c.Command.Subcommands) > 0 {
		cmds = c.Command.Subcommands
	} else {
		cmds = c.App.Commands
	}
	path := commandPath(c)
	best, bestD := "", -1
	for _, cmd := range cmds {
		if cmd.Hidden || cmd.Name == "help" {
			continue
		}
		d := editDistance(name, cmd.Name)
		if strings.HasPrefix(cmd.Name, name) {
			d = 0
		}
		if d <= max(1, len(name)/2) && (bestD < 0 || d < bestD) {
			best, bestD = cmd.Name, d
		}
	}
	if best != "" {
		return fail("unknown command %q: did you mean '%s %s'?", name, path, best)
	}
	return fail("unknown command %q (see '%s --help')", name, path)
}

// unitless are the size flags that hold a sandbox's memory or disk, or a
// request: a few bytes of those is a unit left out, never what was meant.
// (--output-limit and the byte counts of the network and of returned
// files count bytes, and may be small.)
var unitless = []string{"memory", "tmp-size", "max-memory", "max-tmp-size", "max-body"}

// bareSize refuses a size flag of unitless given as a bare number of fewer
// than 4096 bytes ('--tmp-size 5'), with the units to write.
func bareSize(flag, value string) error {
	if !slices.Contains(unitless, flag) || !isNumber(value) {
		return nil
	}
	if n, err := strconv.ParseFloat(value, 64); err != nil || n == 0 || n >= 4096 {
		return nil
	}
	return fmt.Errorf("--%s %s: give a unit, e.g. %sm, 512MiB or 1g (a bare number is bytes)", flag, value, value)
}

// sizeFlag reads the size flag name of c.
func sizeFlag(c *cli.Context, name string) (int64, error) {
	v := c.String(name)
	if err := bareSize(name, v); err != nil {
		return 0, fail("%v", err)
	}
	n, err := runner.ParseSize(v)
	if err != nil {
		return 0, fail("--%s: %v", name, err)
	}
	return n, nil
}
