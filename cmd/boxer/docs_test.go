package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/internal/docs"
	"github.com/urfave/cli/v2"
)

// TestDocFlags: every boxer command in the code blocks of README.md and
// docs/*.md names a real command and only flags that command has, and so
// does every inline `boxer ...` of the prose that names a real command.
func TestDocFlags(t *testing.T) {
	pages, err := docs.Pages(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	app := newApp()
	var checked int
	for _, page := range pages {
		name, _ := filepath.Rel(filepath.Join("..", ".."), page)
		blocks, err := docs.Blocks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if b.Lang != "console" {
				for j, l := range b.Lines {
					if strings.HasPrefix(l, "$ ") {
						t.Errorf("%s:%d: a \"$ \" prompt in a %q block: examples with prompts go in console blocks, which TestDocExamples runs", name, b.Line+j, b.Lang)
					}
				}
			}
			if b.Lang != "console" && b.Lang != "sh" && b.Lang != "bash" {
				continue
			}
			cmds, err := docs.Commands(b)
			if err != nil {
				t.Errorf("%s:%v", name, err)
				continue
			}
			for _, c := range cmds {
				invs, err := docs.Invocations(c.Text)
				if err != nil {
					t.Errorf("%s:%d: %v", name, c.Line, err)
				}
				for _, args := range invs {
					checked++
					if err := checkArgs(app, args, true); err != nil {
						t.Errorf("%s:%d: boxer %s: %v", name, c.Line, strings.Join(args, " "), err)
					}
				}
			}
		}
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range inlineBoxer.FindAllStringSubmatch(line, -1) {
				invs, err := docs.Invocations(m[1])
				if err != nil {
					continue // a placeholder, not a command
				}
				for _, args := range invs {
					for j, a := range args {
						args[j] = strings.Trim(a, "[]")
					}
					checked++
					if err := checkArgs(app, args, false); err != nil {
						t.Errorf("%s:%d: `%s`: %v", name, i+1, m[1], err)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d boxer commands found in the docs: is the parser blind?", checked)
	}
}

var inlineBoxer = regexp.MustCompile("`(boxer [^`]*)`")

// checkArgs checks boxer's arguments against the app: the global flags,
// then the command path, then that command's flags. strict makes an
// unknown command an error; else it is not a command (prose).
func checkArgs(app *cli.App, args []string, strict bool) error {
	flags := app.Flags
	var sub []*cli.Command = app.Commands
	var cmd *cli.Command
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			f, err := findFlag(flags, a, cmd)
			if err != nil {
				return err
			}
			if f != nil && !strings.Contains(a, "=") && takesValue(flags, a) {
				i++
			}
			continue
		}
		if cmd != nil && len(cmd.Subcommands) == 0 {
			continue // an argument of the command
		}
		next := findCommand(sub, a)
		if next == nil {
			if cmd != nil && cmd.Action != nil {
				continue
			}
			if !strict {
				return nil
			}
			where := "boxer"
			if cmd != nil {
				where = "boxer " + cmd.FullName()
			}
			return fmt.Errorf("%s has no command %q", where, a)
		}
		cmd, flags, sub = next, next.Flags, next.Subcommands
	}
	return nil
}

// findFlag returns the flag arg names, nil for --help and --version.
func findFlag(flags []cli.Flag, arg string, cmd *cli.Command) (cli.Flag, error) {
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	if name == "help" || name == "h" || cmd == nil && (name == "version" || name == "v") {
		return nil, nil
	}
	if f := lookupFlag(flags, name); f != nil {
		return f, nil
	}
	where := "boxer"
	if cmd != nil {
		where = "boxer " + cmd.FullName()
	}
	return nil, fmt.Errorf("%s has no flag %s", where, arg)
}
