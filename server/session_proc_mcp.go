package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExecCommandInput is the input of the MCP exec_command tool.
type ExecCommandInput struct {
	SessionID  string `json:"session_id" jsonschema:"the session to run it in"`
	Command    string `json:"command" jsonschema:"a shell command line, run with /bin/sh -c in /workspace"`
	Background bool   `json:"background,omitempty" jsonschema:"start it and return at once (a server, a watcher); list_processes shows it"`
	Tag        string `json:"tag,omitempty" jsonschema:"a name for the process, for list_processes and kill_process"`
	Timeout    string `json:"timeout,omitempty" jsonschema:"in the foreground: kill it after this long, like 30s (default the session's call timeout)"`
}

// ExecCommandOutput is what exec_command answers.
type ExecCommandOutput struct {
	Process  runner.ProcessInfo `json:"process"`
	Stdout   string             `json:"stdout,omitempty"`
	Stderr   string             `json:"stderr,omitempty"`
	TimedOut bool               `json:"timed_out,omitempty"`
}

// ProcessesInput names a session for list_processes.
type ProcessesInput struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
}

// KillProcessInput is the input of the MCP kill_process tool.
type KillProcessInput struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Process   string `json:"process" jsonschema:"the process's number or tag"`
	Signal    string `json:"signal,omitempty" jsonschema:"TERM (default), KILL, INT, HUP..."`
}

// mcpExecTimeout is a foreground command's limit when neither it nor the
// operator says one.
const mcpExecTimeout = 60 * time.Second

// addProcessTools offers exec_command, list_processes and kill_process
// on the sessions of create_session.
func addProcessTools(s *mcp.Server, r *runner.Runner, max runner.Maxima) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "exec_command",
		Description: "Run a shell command in a session (see create_session), as the sandbox's user: in the foreground, " +
			"answering its output and exit code, or in the background (a dev server, a watcher), answering its process number.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in ExecCommandInput) (*mcp.CallToolResult, ExecCommandOutput, error) {
		timeout := or(max.Timeout, mcpExecTimeout)
		if in.Timeout != "" {
			d, err := time.ParseDuration(in.Timeout)
			if err != nil || d <= 0 {
				return nil, ExecCommandOutput{}, &APIError{Field: "timeout", Message: "must be a duration like 30s"}
			}
			timeout = min(d, timeout)
		}
		if strings.TrimSpace(in.Command) == "" {
			return nil, ExecCommandOutput{}, &APIError{Field: "command", Message: "is required"}
		}
		req := runner.ProcessRequest{Args: []string{"/bin/sh", "-c", in.Command}, Tag: in.Tag}
		if in.Background {
			info, err := r.StartProcess(ctx, in.SessionID, mcpCaller, req)
			if err != nil {
				return nil, ExecCommandOutput{}, err
			}
			return textResult(fmt.Sprintf("started process %d (pid %d) in the background", info.ID, info.PID)), ExecCommandOutput{Process: info}, nil
		}
		out, err := execForeground(ctx, r, in.SessionID, req, timeout)
		if err != nil {
			return nil, ExecCommandOutput{}, err
		}
		text := out.Stdout + out.Stderr
		switch {
		case out.TimedOut:
			text += fmt.Sprintf("\n[killed after %s]", timeout)
		case out.Process.ExitCode != nil && *out.Process.ExitCode != 0:
			text += fmt.Sprintf("\n[exit code %d]", *out.Process.ExitCode)
		}
		return textResult(text), out, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_processes",
		Description: "List a session's processes started with exec_command: number, pid, tag, command, running or exit code.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in ProcessesInput) (*mcp.CallToolResult, map[string][]runner.ProcessInfo, error) {
		ps, err := r.Processes(ctx, in.SessionID, mcpCaller)
		if err != nil {
			return nil, nil, err
		}
		data, _ := json.Marshal(ps)
		return textResult(string(data)), map[string][]runner.ProcessInfo{"processes": ps}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "kill_process",
		Description: "Send a signal (TERM by default; KILL ends it and what it started) to a session's process, by number or tag.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in KillProcessInput) (*mcp.CallToolResult, struct{}, error) {
		sig, err := runner.ParseSignal(or(in.Signal, "TERM"))
		if err != nil {
			return nil, struct{}{}, err
		}
		if err := r.SignalProcess(ctx, in.SessionID, mcpCaller, in.Process, sig); err != nil {
			return nil, struct{}{}, err
		}
		return textResult("sent " + sig.String() + " to process " + in.Process), struct{}{}, nil
	})
}

// execForeground starts req and follows it to its end in one request to
// the session's keeper, killing it timeout after it started.
func execForeground(ctx context.Context, r *runner.Runner, id string, req runner.ProcessRequest, timeout time.Duration) (ExecCommandOutput, error) {
	var out ExecCommandOutput
	var stdout, stderr bytes.Buffer
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	var timer *time.Timer
	ended := false
	err := r.RunProcess(wctx, id, mcpCaller, req, func(ev runner.ProcessEvent) error {
		switch {
		case ev.Start != nil:
			out.Process = *ev.Start
			timer = time.AfterFunc(timeout, func() { timedOut.Store(true); cancel() })
		case ev.Stream == runner.StreamStderr:
			stderr.Write(ev.Data)
		case ev.Stream != "":
			stdout.Write(ev.Data)
		case ev.End != nil:
			out.Process, ended = *ev.End, true
		}
		return nil
	})
	if timer != nil {
		timer.Stop()
	}
	if timedOut.Load() && !ended && ctx.Err() == nil {
		out.TimedOut = true
		_ = r.SignalProcess(context.WithoutCancel(ctx), id, mcpCaller, fmt.Sprint(out.Process.ID), syscall.SIGKILL)
	} else if err != nil {
		return ExecCommandOutput{}, err
	}
	out.Stdout, out.Stderr = runner.ValidUTF8(stdout.Bytes()), runner.ValidUTF8(stderr.Bytes())
	return out, nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
