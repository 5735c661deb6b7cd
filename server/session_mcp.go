package server

import (
	"context"
	"fmt"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpCaller owns the sessions of an MCP server: it serves one client, and
// its sessions end when that client disconnects (CloseSessions).
const mcpCaller = "mcp"

// CreateSessionInput is the input of the MCP create_session tool.
type CreateSessionInput struct {
	Lang        string   `json:"lang" jsonschema:"language preset (see list_languages)"`
	Runtime     string   `json:"runtime,omitempty" jsonschema:"OCI runtime: runc (default) or runsc (gVisor)"`
	Memory      string   `json:"memory,omitempty" jsonschema:"memory limit of the whole session, like 512m"`
	CPUs        *float64 `json:"cpus,omitempty" jsonschema:"CPU quota in cores"`
	Pids        *int64   `json:"pids,omitempty" jsonschema:"process and thread cap"`
	TmpSize     string   `json:"tmp_size,omitempty" jsonschema:"size of /tmp and /workspace, like 256m"`
	Timeout     string   `json:"timeout,omitempty" jsonschema:"each call's default wall clock limit, like 30s"`
	IdleTimeout string   `json:"idle_timeout,omitempty" jsonschema:"end the session after this long without a call, like 10m"`
	Lifetime    string   `json:"lifetime,omitempty" jsonschema:"end the session this long after it starts, like 1h"`
	Preload     *bool    `json:"preload,omitempty" jsonschema:"false: an interpreter that has imported nothing ahead of the calls (default true: a ready session, its language's modules imported, when the server has one)"`
	Secrets     []string `json:"secrets,omitempty" jsonschema:"secrets the session's processes get by name, from those the server holds: NAME (the file /run/secrets/NAME) or NAME,env (and the variable NAME); their values are masked in every output of the session. Never a value"`
}

// CloseSessionInput is the input of the MCP close_session tool.
type CloseSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the session to close"`
}

// addSessionTools offers create_session, close_session and the session's
// file tools; run_code runs in a session when given its session_id.
func addSessionTools(s *mcp.Server, r *runner.Runner, max runner.Maxima, smax runner.SessionMaxima, log *audit.Log) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "create_session",
		Description: "Create a session: a sandbox that lives across run_code calls (give run_code its session_id). " +
			"Files in /workspace persist; for python and python-data, variables and imports persist too, like a notebook. " +
			"It ends after idle_timeout without a call, at its lifetime, with close_session, or when this client disconnects.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in CreateSessionInput) (*mcp.CallToolResult, runner.Session, error) {
		rr := RunRequest{Lang: in.Lang, Input: Input{Runtime: in.Runtime, Memory: in.Memory, CPUs: in.CPUs, Pids: in.Pids, TmpSize: in.TmpSize, Timeout: in.Timeout, Secrets: in.Secrets}}
		rr.Preload = in.Preload
		sr, err := SessionRequest{RunRequest: rr, IdleTimeout: in.IdleTimeout, Lifetime: in.Lifetime}.sessionRequest(max, mcpCaller)
		if err != nil {
			return nil, runner.Session{}, err
		}
		sess, err := r.CreateSession(ctx, sr, max, smax)
		e := mcpEntry(audit.EventCreated, sess.ID, err)
		e.Lang, e.Image = in.Lang, sess.Image
		log.Write(e)
		if err != nil {
			return nil, runner.Session{}, err
		}
		text := fmt.Sprintf("session %s (%s on %s) ready: pass session_id %q to run_code; it ends after %s idle or at %s",
			sess.ID, sess.Lang, sess.Runtime, sess.ID, time.Duration(sess.IdleTimeout), sess.ExpiresAt.Format(time.RFC3339))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, sess, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "close_session",
		Description: "Close a session made with create_session and remove everything it was.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in CloseSessionInput) (*mcp.CallToolResult, struct{}, error) {
		err := r.RemoveSession(ctx, in.SessionID, mcpCaller)
		e := mcpEntry(audit.EventEnded, in.SessionID, err)
		if err == nil {
			e.Reason, e.Network = reaper.EndRemoved, r.EndedNetwork(in.SessionID)
		}
		log.Write(e)
		if err != nil {
			return nil, struct{}{}, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "session " + in.SessionID + " closed"}}}, struct{}{}, nil
	})
	addSessionFileTools(s, r, max)
	addProcessTools(s, r, max)
}

// runInSession is run_code with a session_id.
func runInSession(ctx context.Context, r *runner.Runner, max runner.Maxima, in RunCodeInput, p *progress) (runner.Result, error) {
	call, err := CallRequest{
		Code: in.Code, Stdin: in.Stdin, Files: in.Files, FilesBase64: in.FilesBase64, ReturnFiles: in.ReturnFiles,
		Timeout: in.Timeout, OutputLimit: in.OutputLimit,
	}.call(max)
	if err != nil {
		return runner.Result{}, err
	}
	if p != nil {
		call.Stdout, call.Stderr = p.writer(stdout), p.writer(stderr)
	}
	return r.RunInSession(ctx, in.SessionID, mcpCaller, call, max)
}
