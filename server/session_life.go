package server

// A session's life over HTTP: pause, resume, its time left, its figures.

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
)

// TimeoutRequest is the body of POST /v1/sessions/{id}/timeout.
type TimeoutRequest struct {
	Timeout string `json:"timeout" jsonschema:"the time the session has left from now, like 30m: it ends then, earlier or later than it would have"`
}

func (s *Server) handleSessionPause(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, err := s.runner.PauseSession(r.Context(), id, owner(r))
	s.answerSession(w, r, audit.EventPaused, id, sess, err)
}

func (s *Server) handleSessionResume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, err := s.runner.ResumeSession(r.Context(), id, owner(r))
	s.answerSession(w, r, audit.EventResumed, id, sess, err)
}

func (s *Server) handleSessionCheckpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, err := s.runner.CheckpointSession(r.Context(), id, owner(r))
	s.answerSession(w, r, audit.EventCheckpointed, id, sess, err)
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork, which may be
// empty.
type ForkRequest struct {
	Count int `json:"count,omitempty" jsonschema:"how many sessions to make from it, 1 to 8 (default 1)"`
}

func (s *Server) handleSessionFork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body ForkRequest
	if r.ContentLength != 0 && !s.decodeBody(w, r, &body) {
		return
	}
	forks, err := s.runner.ForkSession(r.Context(), id, owner(r), cmp.Or(body.Count, 1), true, s.cfg.Sessions)
	if err != nil {
		s.answerLifeError(w, r, audit.EventForked, id, err)
		return
	}
	for _, f := range forks {
		e := s.sessionEntry(r, audit.EventForked, f.ID, http.StatusCreated, "from "+id)
		e.Lang, e.Image = f.Lang, f.Image
		s.audit.Write(e)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sessions": forks})
}

func (s *Server) handleSessionTimeout(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body TimeoutRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	d, err := time.ParseDuration(body.Timeout)
	if err != nil || d <= 0 {
		s.reject(w, r, http.StatusBadRequest, &runner.FieldError{Field: runner.FieldTimeout, Message: fmt.Sprintf("must be a positive duration, like 30m, not %q", body.Timeout)}, nil)
		return
	}
	sess, err := s.runner.SetSessionTimeout(r.Context(), id, owner(r), d, s.cfg.Sessions)
	s.answerSession(w, r, audit.EventTimeout, id, sess, err)
}

func (s *Server) handleSessionStats(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := s.runner.SessionStats(r.Context(), id, owner(r))
	if err != nil {
		s.answerLifeError(w, r, audit.EventStats, id, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// answerSession answers a change to a session's life with the session as
// it is now, and logs it.
func (s *Server) answerSession(w http.ResponseWriter, r *http.Request, event, id string, sess runner.Session, err error) {
	if err != nil {
		s.answerLifeError(w, r, event, id, err)
		return
	}
	s.audit.Write(s.sessionEntry(r, event, id, http.StatusOK, ""))
	writeJSON(w, http.StatusOK, sess)
}

// answerLifeError answers a failed change to a session's life, and logs it.
func (s *Server) answerLifeError(w http.ResponseWriter, r *http.Request, event, id string, err error) {
	code := sessionStatus(err)
	s.metrics.rejected.WithLabelValues(fmt.Sprint(code)).Inc()
	s.audit.Write(s.sessionEntry(r, event, id, code, err.Error()))
	writeJSON(w, code, sessionAPIError(code, err))
}
