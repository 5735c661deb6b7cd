//go:build !boxer_cli

package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolName is a word of help text that names an MCP tool: snake_case.
var toolName = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`)

// TestHelpNamesEveryMCPTool: 'boxer --help' and 'boxer mcp --help' name
// each tool the MCP server offers.
func TestHelpNamesEveryMCPTool(t *testing.T) {
	ctx := context.Background()
	s, err := server.NewMCP(nil, runner.Maxima{}, runner.SessionMaxima{}, 1, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tool := range list.Tools {
		want = append(want, tool.Name)
	}
	slices.Sort(want)
	if len(want) < 10 {
		t.Fatalf("the MCP server lists %d tools (%v), want at least 10", len(want), want)
	}
	for _, help := range []struct{ name, text string }{
		{"boxer --help", newApp().Description},
		{"boxer mcp --help", mcpCommand().Description},
	} {
		named := toolName.FindAllString(help.text, -1)
		for _, tool := range want {
			if !slices.Contains(named, tool) {
				t.Errorf("%s does not name the MCP tool %s (it names %v; the server has %v)", help.name, tool, named, want)
			}
		}
	}
}

// TestCreateSessionInputsDocumented: docs/http.md's create_session section
// names every input of the tool.
func TestCreateSessionInputsDocumented(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "http.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(text), "\n### create_session and close_session\n")
	section, _, _ = strings.Cut(section, "\n#")
	typ := reflect.TypeOf(server.CreateSessionInput{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/http.md's create_session section does not name its input %s", name)
		}
	}
}
