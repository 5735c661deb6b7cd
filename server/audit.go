package server

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner"
)

// auditEntry is one line of the audit log: who asked for what and how it
// ended. Never the code or its output.
type auditEntry struct {
	Time time.Time `json:"time"`
	// Event is set for sessions: session_created, session_run,
	// session_files, session_ended (with Reason).
	Event           string            `json:"event,omitempty"`
	Session         string            `json:"session,omitempty"`
	Reason          string            `json:"reason,omitempty"`
	ID              string            `json:"id,omitempty"`
	Caller          string            `json:"caller"`
	Lang            string            `json:"lang,omitempty"`
	Image           string            `json:"image,omitempty"`
	CodeSHA256      string            `json:"code_sha256,omitempty"`
	Limits          map[string]string `json:"limits,omitempty"`
	HTTPStatus      int               `json:"http_status"`
	Status          string            `json:"status,omitempty"`
	ExitCode        *int              `json:"exit_code,omitempty"`
	Error           string            `json:"error,omitempty"`
	QueueMs         float64           `json:"queue_ms"`
	RunMs           float64           `json:"run_ms"`
	StdoutTruncated bool              `json:"stdout_truncated,omitempty"`
	StderrTruncated bool              `json:"stderr_truncated,omitempty"`
	// Network is a run with egress's network report.
	Network *egress.Report `json:"network,omitempty"`
	// Secrets names the secrets the request asked for; Injected the
	// headers the proxy set. Never a value.
	Secrets  []string                `json:"secrets,omitempty"`
	Injected []runner.InjectedHeader `json:"injected,omitempty"`
}

// auditLog appends JSON Lines, one per request, safely from many handlers.
type auditLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (a *auditLog) write(e auditEntry) {
	if a == nil || a.w == nil {
		return
	}
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(line, '\n'))
}
