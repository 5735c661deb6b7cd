package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
)

// A session's processes over HTTP (docs/http.md, "Processes"): start one,
// list them, follow one's output, send it stdin, a signal, a new terminal
// size.

// SignalRequest is the body of a process's signal.
type SignalRequest struct {
	Signal string `json:"signal"`
}

func (s *Server) handleProcessStart(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req runner.ProcessRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	info, err := s.runner.StartProcess(r.Context(), id, owner(r), req)
	if err != nil {
		s.answerProcessError(w, r, id, err)
		return
	}
	s.audit.Write(s.sessionEntry(r, audit.EventProcess, id, http.StatusCreated, ""))
	writeJSON(w, http.StatusCreated, info)
}

func (s *Server) handleProcessList(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ps, err := s.runner.Processes(r.Context(), id, owner(r))
	if err != nil {
		s.answerProcessError(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"processes": ps})
}

func (s *Server) handleProcessOutput(w http.ResponseWriter, r *http.Request) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	var from int64
	if v := r.URL.Query().Get("from"); v != "" {
		var err error
		if from, err = strconv.ParseInt(v, 10, 64); err != nil || from < 0 {
			s.reject(w, r, http.StatusBadRequest, &APIError{Field: "from", Message: "must be a byte offset, 0 or more"}, nil)
			return
		}
	}
	done, err := s.runner.HoldStream(owner(r))
	if err != nil {
		s.answerProcessError(w, r, id, err)
		return
	}
	defer done()
	out := newNDJSONStream(w)
	err = s.runner.AttachProcess(r.Context(), id, owner(r), ref, from, func(ev runner.ProcessEvent) error {
		out.mu.Lock()
		defer out.mu.Unlock()
		out.line(ev)
		return out.err
	})
	if err != nil && !out.started() && r.Context().Err() == nil {
		s.answerProcessError(w, r, id, err)
		return
	}
	out.mu.Lock()
	_ = out.rc.SetWriteDeadline(time.Time{})
	out.mu.Unlock()
}

func (s *Server) handleProcessSignal(w http.ResponseWriter, r *http.Request) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	var body SignalRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	sig, err := runner.ParseSignal(body.Signal)
	if err == nil {
		err = s.runner.SignalProcess(r.Context(), id, owner(r), ref, sig)
	}
	s.processDone(w, r, id, err)
}

func (s *Server) handleProcessStdin(w http.ResponseWriter, r *http.Request) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	closeAfter := false
	switch v := r.URL.Query().Get("close"); v {
	case "", "false", "0":
	case "true", "1":
		closeAfter = true
	default:
		s.reject(w, r, http.StatusBadRequest, &APIError{Field: "close", Message: fmt.Sprintf("must be true or false, not %q", v)}, nil)
		return
	}
	err := s.runner.SendStdin(r.Context(), id, owner(r), ref, http.MaxBytesReader(w, r.Body, s.cfg.MaxBody), closeAfter)
	s.processDone(w, r, id, err)
}

func (s *Server) handleProcessResize(w http.ResponseWriter, r *http.Request) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	var size runner.TermSize
	if !s.decodeBody(w, r, &size) {
		return
	}
	s.processDone(w, r, id, s.runner.ResizeProcess(r.Context(), id, owner(r), ref, size))
}

// processDone answers an operation on a process: 204, or its error.
func (s *Server) processDone(w http.ResponseWriter, r *http.Request, id string, err error) {
	if err != nil {
		s.answerProcessError(w, r, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// answerProcessError answers a failed process operation: 404 naming the
// process for one the session does not have.
func (s *Server) answerProcessError(w http.ResponseWriter, r *http.Request, id string, err error) {
	if errors.Is(err, runner.ErrProcessNotFound) {
		s.metrics.rejected.WithLabelValues("404").Inc()
		writeJSON(w, http.StatusNotFound, &APIError{Field: "process", Message: err.Error()})
		return
	}
	s.answerSessionError(w, r, id, err)
}
