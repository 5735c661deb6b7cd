package server

// MCP's lines of the audit log: its tools' runs and its sessions' life.

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
)

// mcpEntry is an audit line of an MCP tool call about session id ("" for
// a run), which failed with err (nil: it went through).
func mcpEntry(event, id string, err error) audit.Entry {
	e := audit.Entry{Event: event, Interface: audit.MCP, Caller: mcpCaller, Session: id}
	if err != nil {
		e.Error = err.Error()
	}
	return e
}

// mcpRunEntry is the audit line of run_code: a run, or a call in session
// id.
func mcpRunEntry(in RunCodeInput, lang string, res runner.Result, err error) audit.Entry {
	e := mcpEntry(audit.EventRun, in.SessionID, err)
	if in.SessionID != "" {
		e.Event = audit.EventCall
	}
	if in.Code != "" {
		sum := sha256.Sum256([]byte(in.Code))
		e.CodeSHA256 = hex.EncodeToString(sum[:])
	}
	e.Lang = lang
	if err == nil {
		e.ID, e.Status, e.Image, e.ExitCode = res.ID, res.Status, res.Image, &res.ExitCode
		e.StdoutTruncated, e.StderrTruncated = res.StdoutTruncated, res.StderrTruncated
		e.Network, e.Injected = res.Network, injected(res.Injected)
		if res.Error != "" {
			e.Error = res.Error
		}
	}
	return e
}

// EndedEntry is the audit line of a session a process ended on its own
// (its idle timeout, its lifetime, its client gone), with what its
// network carried.
func EndedEntry(e runner.EndedSession) audit.Entry {
	return audit.Entry{Event: audit.EventEnded, Caller: audit.Server, Session: e.ID, Reason: e.Reason, Network: e.Network}
}
