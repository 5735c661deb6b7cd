package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

func TestNoteCopied(t *testing.T) {
	tests := []struct {
		files   []runner.File
		skipped int
		want    string
	}{
		{[]runner.File{{Path: "a", Size: 1}}, 0, "boxer: copied 1 file (1 byte) to out\n"},
		{[]runner.File{{Path: "a", Size: 3}, {Path: "b", Size: 7}}, 0, "boxer: copied 2 files (10 bytes) to out\n"},
		{nil, 2, "boxer: copied 0 files (0 bytes) to out; skipped 2 (symlinks, special files, over it)\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		noteCopied(&b, tc.files, "to out", tc.skipped, "over it")
		if b.String() != tc.want {
			t.Errorf("noteCopied = %q, want %q", b.String(), tc.want)
		}
	}
}

func TestDurationHint(t *testing.T) {
	if got, want := durationHint("--timeout", "5"), "--timeout 5: give a unit, e.g. 5s, 500ms, 2m"; got != want {
		t.Errorf("durationHint = %q, want %q", got, want)
	}
}

func TestBareSize(t *testing.T) {
	tests := []struct {
		flag, value string
		refused     bool
	}{
		{"tmp-size", "5", true},
		{"memory", "4095", true},
		{"memory", "1.5", true},
		{"memory", "4096", false},
		{"memory", "0", false}, // refused elsewhere: must be at least 6MiB
		{"memory", "5m", false},
		{"output-limit", "100", false},
		{"max-body", "64", true},
	}
	for _, tc := range tests {
		if err := bareSize(tc.flag, tc.value); (err != nil) != tc.refused {
			t.Errorf("bareSize(%q, %q) = %v, want refused %v", tc.flag, tc.value, err, tc.refused)
		}
	}
}

// TestHelpTexts: every command says what it does and what arguments it
// takes, every flag what it is; 'boxer --help' tells of sessions, serve
// and mcp with what they serve.
func TestHelpTexts(t *testing.T) {
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			name := path + " " + c.Name
			if c.Usage == "" {
				t.Errorf("%s: no Usage", name)
			}
			for _, f := range c.Flags {
				if u, ok := f.(cli.DocGenerationFlag); !ok || u.GetUsage() == "" {
					t.Errorf("%s --%s: no usage", name, f.Names()[0])
				}
			}
			walk(name, c.Subcommands)
		}
	}
	app := newApp()
	walk("boxer", app.Commands)
	for _, c := range [][]string{{"image", "build"}, {"image", "import"}, {"image", "pull"}, {"image", "rm"}, {"session", "run"}, {"session", "cp"}, {"session", "rm"}} {
		if cmd := findCommand(findCommand(app.Commands, c[0]).Subcommands, c[1]); cmd.ArgsUsage == "" {
			t.Errorf("boxer %s: no ArgsUsage", strings.Join(c, " "))
		}
	}
	var out bytes.Buffer
	app.Writer = &out
	if err := app.RunContext(context.Background(), []string{"boxer", "--help"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"boxer session", "/v1/sessions", "create_session", "close_session", "run_code", "must run as root"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("boxer --help does not say %q:\n%s", want, out.String())
		}
	}
	for _, c := range []string{"serve", "mcp"} {
		if u := findCommand(app.Commands, c).Usage; !strings.Contains(u, "session") {
			t.Errorf("boxer %s's usage does not tell of sessions: %q", c, u)
		}
	}
}
