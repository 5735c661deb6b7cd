package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session's files over MCP: what an agent needs of them beside run_code
// (read, write, list), on the runner's file operations.

// ReadFileInput is the input of the MCP read_file tool.
type ReadFileInput struct {
	SessionID string `json:"session_id" jsonschema:"the session (from create_session)"`
	Path      string `json:"path" jsonschema:"the file: absolute under /workspace, /tmp or /home/user, or relative to /workspace"`
}

// ReadFileOutput is what read_file answers: the file as text when it is
// UTF-8, else as base64.
type ReadFileOutput struct {
	Path          string `json:"path"`
	Size          int    `json:"size"`
	Content       string `json:"content,omitempty"`
	ContentBase64 string `json:"content_base64,omitempty"`
}

// WriteFileInput is the input of the MCP write_file tool.
type WriteFileInput struct {
	SessionID     string `json:"session_id" jsonschema:"the session (from create_session)"`
	Path          string `json:"path" jsonschema:"the file: absolute under /workspace, /tmp or /home/user, or relative to /workspace; missing directories are made"`
	Content       string `json:"content,omitempty" jsonschema:"the file's text"`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"the file's bytes, base64 (instead of content)"`
}

// ListFilesInput is the input of the MCP list_files tool.
type ListFilesInput struct {
	SessionID string `json:"session_id" jsonschema:"the session (from create_session)"`
	Path      string `json:"path,omitempty" jsonschema:"the directory: absolute under /workspace, /tmp or /home/user, or relative to /workspace (default /workspace)"`
	Depth     int    `json:"depth,omitempty" jsonschema:"levels of directories to list (default 1)"`
}

// mcpPath is a tool's path in the sandbox: relative ones are under
// /workspace, as run_code's files are.
func mcpPath(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return path.Join("/workspace", p)
}

// addSessionFileTools offers read_file, write_file and list_files in the
// MCP server's sessions.
func addSessionFileTools(s *mcp.Server, r *runner.Runner, max runner.Maxima) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		Description: "Read a file of a session (from create_session): under /workspace, /tmp or /home/user. Text comes as content, other bytes as content_base64.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, ReadFileOutput, error) {
		limit := max.ReturnBytes
		if limit <= 0 {
			limit = runner.DefaultReturnBytes
		}
		p := mcpPath(in.Path)
		data, err := r.ReadSessionPath(ctx, in.SessionID, mcpCaller, p, limit)
		if err != nil {
			return nil, ReadFileOutput{}, err
		}
		out := ReadFileOutput{Path: path.Clean(p), Size: len(data)}
		text := fmt.Sprintf("%s (%d bytes", out.Path, out.Size)
		if utf8.Valid(data) {
			out.Content = string(data)
			text += "):\n" + out.Content
		} else {
			out.ContentBase64 = base64.StdEncoding.EncodeToString(data)
			text += ", not text: see content_base64)"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_file",
		Description: "Write a file in a session (from create_session): under /workspace, /tmp or /home/user, making the directories it lacks; it replaces what was there.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in WriteFileInput) (*mcp.CallToolResult, runner.FileEntry, error) {
		data := []byte(in.Content)
		if in.ContentBase64 != "" {
			if in.Content != "" {
				return nil, runner.FileEntry{}, &runner.FieldError{Field: "content_base64", Message: "is instead of content: give one"}
			}
			var err error
			if data, err = base64.StdEncoding.DecodeString(in.ContentBase64); err != nil {
				return nil, runner.FileEntry{}, &runner.FieldError{Field: "content_base64", Message: "is not standard base64"}
			}
		}
		e, err := r.WriteSessionPath(ctx, in.SessionID, mcpCaller, mcpPath(in.Path), bytes.NewReader(data))
		if err != nil {
			return nil, runner.FileEntry{}, err
		}
		text := fmt.Sprintf("wrote %s (%d bytes)", e.Path, e.Size)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, e, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_files",
		Description: "List a directory of a session (from create_session): under /workspace, /tmp or /home/user; symlinks are listed, not followed.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in ListFilesInput) (*mcp.CallToolResult, ListAnswer, error) {
		depth := in.Depth
		if depth == 0 {
			depth = 1
		}
		entries, err := r.ListSessionDir(ctx, in.SessionID, mcpCaller, mcpPath(in.Path), depth)
		if err != nil {
			return nil, ListAnswer{}, err
		}
		var b strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&b, "%s %d %s", e.Permissions, e.Size, e.Path)
			if e.SymlinkTarget != "" {
				fmt.Fprintf(&b, " -> %s", e.SymlinkTarget)
			}
			b.WriteString("\n")
		}
		if len(entries) == 0 {
			b.WriteString("(empty)\n")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, ListAnswer{Entries: entries}, nil
	})
}
