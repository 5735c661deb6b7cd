package interp

// A cell: /execute runs it in its context and streams its events.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// executeRequest is E2B's ExecutionRequest.
type executeRequest struct {
	Code      *string           `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// execute runs a cell and streams its events.
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	sb := s.host.Sandbox(r.Context())
	var req executeRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Code == nil {
		s.host.WriteError(w, http.StatusBadRequest, "code is required: the code to run")
		return
	}
	if req.ContextID != "" && req.Language != "" {
		s.host.WriteError(w, http.StatusBadRequest, "context_id and language: give one of them, not both (a context has its language)")
		return
	}
	lang, err := checkLanguage(req.Language)
	if err != nil {
		s.host.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := checkEnv(req.EnvVars); err != nil {
		s.host.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	var c CodeContext
	var driver string
	if req.ContextID != "" {
		var ok bool
		if c, driver, ok = s.findContext(sb, req.ContextID); !ok {
			s.host.WriteError(w, http.StatusNotFound, fmt.Sprintf("context %s not found in sandbox %s: make one with POST /contexts (createCodeContext)", req.ContextID, sb.ID))
			return
		}
	} else {
		var ok bool
		if c, driver, ok = s.cellDefault(w, r, sb, lang); !ok {
			return
		}
	}
	code := *req.Code
	if c.Language == runner.CellPython {
		code = shellEscapes(leadingIndent(code))
	}
	// A cell may run far longer than the listener's write timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream := newExecStream(w, cancel)
	stop := make(chan struct{})
	defer close(stop)
	go stream.keepalive(stop)
	call := runner.SessionCall{
		Code:    []byte(code),
		Timeout: s.cellTimeout(),
		Stdout:  output{e: stream, kind: "stdout"},
		Stderr:  output{e: stream, kind: "stderr", tail: 1},
		Cell: &runner.Cell{
			Context:   driver,
			Language:  c.Language,
			Cwd:       c.Cwd,
			GlobalEnv: sb.Env,
			Env:       req.EnvVars,
			Record:    stream.record,
		},
	}
	res, err := s.cfg.Runner.RunInSession(ctx, sb.ID, sb.Caller, call, s.cfg.Max)
	stream.flush()
	if errors.Is(err, runner.ErrInterrupted) && ctx.Err() != nil {
		return // the client went away: nobody reads what would follow
	}
	if err != nil && !stream.begun() {
		s.writeRunnerError(w, sb, err)
		return
	}
	if res.SessionEnded != "" || sb.Killed() {
		// As E2B's: a cell whose sandbox ended is no result but a cut
		// stream, which runCode rejects.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		msg := res.Error
		if msg == "" && err != nil {
			msg = err.Error()
		}
		stream.send(map[string]any{"type": "error", "name": "SandboxError", "value": msg, "traceback": ""})
	}
	stream.send(map[string]any{"type": "end_of_execution"})
}

// cellTimeout is a cell's timeout: the operator's maximum, if any.
func (s *Server) cellTimeout() time.Duration {
	if s.cfg.Max.Timeout > 0 {
		return s.cfg.Max.Timeout
	}
	return defaultCellTimeout
}
