//go:build !boxer_cli

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// tableFlag finds the flags a flag table's first column names.
var tableFlag = regexp.MustCompile("`(--[a-z0-9-]+)")

// flagTable returns the flags named in the first column of the first
// table ("| flag | default | meaning |") after heading in page.
func flagTable(t *testing.T, page, heading string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", page))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", page, heading)
	}
	_, rest, ok = strings.Cut(rest, "| flag | default | meaning |\n")
	if !ok {
		t.Fatalf("%s: no flag table under %q", page, heading)
	}
	var out []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first := strings.Split(line, "|")[1]
		for _, m := range tableFlag.FindAllStringSubmatch(first, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestFlagTables: the flag tables of docs/http.md list every flag of
// boxer serve and boxer mcp.
func TestFlagTables(t *testing.T) {
	for _, tc := range []struct {
		heading string
		cmd     *cli.Command
	}{
		{"## boxer serve", serveCommand()},
		{"## boxer mcp", mcpCommand()},
	} {
		listed := flagTable(t, "docs/http.md", tc.heading)
		for _, f := range tc.cmd.Flags {
			if bf, ok := f.(interface{ IsVisible() bool }); ok && !bf.IsVisible() {
				continue
			}
			if name := "--" + f.Names()[0]; !slices.Contains(listed, name) {
				t.Errorf("docs/http.md %s: the flag table lacks %s", tc.heading, name)
			}
		}
	}
}

// TestContentsLists: a page of docs/ that opens with a contents list (the
// "- [Title](#anchor)" lines before its first section) lists every one of
// its sections.
func TestContentsLists(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		head, body, ok := strings.Cut(string(text), "\n## ")
		if !ok || !strings.Contains(head, "\n- [") {
			continue
		}
		checked++
		var fence bool
		for _, line := range strings.Split("## "+body, "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			title, ok := strings.CutPrefix(line, "## ")
			if fence || !ok {
				continue
			}
			if !strings.Contains(head, "- ["+title+"](") {
				t.Errorf("%s: the contents list lacks %q", filepath.Base(page), title)
			}
		}
	}
	if checked < 2 {
		t.Errorf("only %d pages with a contents list found", checked)
	}
}
