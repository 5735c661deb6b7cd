// The command line before the cli package reads it: flags after a
// command's arguments, as the usage lines write them.
package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// keepOrder are the commands whose arguments are a program's command
// line, which may hold flags of its own ('boxer run --image I python3 -c
// CODE'), or a program's order: nothing after their first argument is
// boxer's. ('boxer session run ID -c CODE' is not one: a call's code is
// a flag's value.)
var keepOrder = []string{"run", "standby"}

// flagsFirst moves the flags that follow a command's arguments in front of
// them, so that 'boxer image import FILE --name REF' reads as 'boxer image
// import --name REF FILE': the cli package, like Go's flag package, stops
// at the first argument. Everything after "--" stays where it is, and so
// does every argument of the commands in keepOrder. A flag keeps its value
// with it: the next word, for a flag that takes one.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	// The global flags, then the command and its subcommands by name.
	i := skipFlags(app.Flags, args, 1)
	if i >= len(args) {
		return args
	}
	cmd := findCommand(app.Commands, args[i])
	if cmd == nil || slices.Contains(keepOrder, cmd.Name) {
		return args
	}
	for {
		i++
		if len(cmd.Subcommands) == 0 || i >= len(args) {
			break
		}
		sub := findCommand(cmd.Subcommands, args[i])
		if sub == nil {
			break
		}
		cmd = sub
	}
	if len(cmd.Subcommands) > 0 {
		return args
	}
	var flags, rest []string
	for j := i; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			rest = append(rest, args[j:]...)
			j = len(args)
		case isFlag(a):
			flags = append(flags, a)
			if !strings.Contains(a, "=") && takesValue(cmd.Flags, a) && j+1 < len(args) {
				j++
				flags = append(flags, args[j])
			}
		default:
			rest = append(rest, a)
		}
	}
	out := append([]string{}, args[:i]...)
	return append(append(out, flags...), rest...)
}

// skipFlags returns the index of the first word from i on that is not one
// of flags (or a flag's value).
func skipFlags(flags []cli.Flag, args []string, i int) int {
	for i < len(args) && isFlag(args[i]) {
		if !strings.Contains(args[i], "=") && takesValue(flags, args[i]) {
			i++
		}
		i++
	}
	return i
}

// isFlag reports whether a word is written as a flag: "-x", "--xy",
// "--xy=v"; not "-" (stdin, by convention) and not "--".
func isFlag(a string) bool {
	return len(a) > 1 && a[0] == '-' && a != "--"
}

// takesValue reports whether the flag a names (as "-x" or "--xy") is one
// of flags and reads the next word as its value. An unknown flag takes
// none: the cli package refuses it anyway.
func takesValue(flags []cli.Flag, a string) bool {
	f := lookupFlag(flags, strings.TrimLeft(a, "-"))
	if f == nil {
		return false
	}
	if v, ok := f.(cli.DocGenerationFlag); ok {
		return v.TakesValue()
	}
	return false
}

// lookupFlag is the flag of flags with the given name or alias.
func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// findCommand is the command of cmds with the given name or alias.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
