package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner"
)

// Sessions over HTTP (docs/http.md, "Sessions"): a session belongs to the
// caller that made it, named by its token (or "anonymous" on a server
// without tokens). Another caller's session is answered 404, as one that
// does not exist.

// SessionRequest is the body of POST /v1/sessions: the run fields that
// shape a sandbox, its files, and the session's timeouts. timeout and
// output_limit are each call's defaults.
type SessionRequest struct {
	RunRequest
	IdleTimeout string `json:"idle_timeout,omitempty" jsonschema:"end the session after this long without a call, like 10m"`
	Lifetime    string `json:"lifetime,omitempty" jsonschema:"end the session this long after it starts, whatever happens, like 1h"`
	// RunRequest's Preload false: a session whose interpreter has
	// imported nothing ahead of its calls, never a ready one (default
	// true: a ready session of the same shape, preloaded with its
	// language's modules, is taken if there is one).
}

// SessionHeir is the heir of the sessions boxer's API makes: the next
// boxer serve of the namespace takes them over when this one is killed
// or crashes (runner.SessionRequest.Heir). MCP's sessions, and E2B's
// until their records outlive the server, end with the server.
const SessionHeir = "serve"

// CallRequest is the body of POST /v1/sessions/{id}/runs.
type CallRequest struct {
	Code        string            `json:"code" jsonschema:"the code to run in the session"`
	Stdin       string            `json:"stdin,omitempty" jsonschema:"the call's standard input"`
	Files       map[string]string `json:"files,omitempty" jsonschema:"files written into /workspace before the call"`
	FilesBase64 map[string]string `json:"files_base64,omitempty" jsonschema:"binary files written into /workspace before the call, base64"`
	ReturnFiles []string          `json:"return_files,omitempty" jsonschema:"globs relative to /workspace of files the result carries back"`
	Timeout     string            `json:"timeout,omitempty" jsonschema:"this call's wall clock limit, like 30s (default: the session's)"`
	OutputLimit string            `json:"output_limit,omitempty" jsonschema:"bytes kept per output stream for this call (default: the session's)"`
}

// sessionRequest turns the body into the runner's session request.
func (sr SessionRequest) sessionRequest(max runner.Maxima, caller string) (runner.SessionRequest, error) {
	out := runner.SessionRequest{Caller: caller, Held: true, NoPreload: sr.Preload != nil && !*sr.Preload}
	var err error
	for _, d := range []struct {
		field, v string
		dst      *time.Duration
	}{{runner.FieldIdle, sr.IdleTimeout, &out.Idle}, {runner.FieldLifetime, sr.Lifetime, &out.Lifetime}} {
		if d.v == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.v); err != nil || *d.dst <= 0 {
			return out, &runner.FieldError{Field: d.field, Message: fmt.Sprintf("must be a positive duration, like 10m, not %q", d.v)}
		}
	}
	// A session is made empty: what runs, and its input, come with each
	// call.
	for _, f := range []struct {
		field, msg string
		set        bool
	}{
		{runner.FieldCode, "is for a call (POST /v1/sessions/{id}/runs): a session is made empty", sr.Code != ""},
		{runner.FieldCommand, "is not available for sessions: a session runs its language's calls (use a run)", len(sr.Command) > 0},
		{fieldStdin, "is for a call (POST /v1/sessions/{id}/runs): a session is made empty", sr.Stdin != ""},
	} {
		if f.set {
			return out, &runner.FieldError{Field: f.field, Message: f.msg}
		}
	}
	// The sandbox's shape as a run's, unnormalized: CreateSession
	// normalizes it within the server's caps.
	req, err := sr.RunRequest.decode(max)
	if err != nil {
		return out, err
	}
	req.ReturnBytes = 0
	out.Request = req
	return out, nil
}

// call turns the body into the runner's call.
func (cr CallRequest) call(max runner.Maxima) (runner.SessionCall, error) {
	files, err := decodeFiles(cr.Files, cr.FilesBase64)
	if err != nil {
		return runner.SessionCall{}, err
	}
	c := runner.SessionCall{Code: []byte(cr.Code), Files: files, ReturnFiles: cr.ReturnFiles, ReturnBytes: max.ReturnBytes}
	if cr.Stdin != "" {
		c.Stdin = strings.NewReader(cr.Stdin)
	}
	if cr.Timeout != "" {
		if c.Timeout, err = runner.ParseTimeout(cr.Timeout); err != nil {
			return c, err
		}
	}
	if cr.OutputLimit != "" {
		if c.OutputLimit, err = runner.ParseSizeLimit(runner.FieldOutputLimit, cr.OutputLimit); err != nil {
			return c, err
		}
	}
	return c, nil
}

// owner names the caller a session belongs to: a short hash of its token,
// never the token.
func owner(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "anonymous"
	}
	sum := sha256.Sum256([]byte(auth))
	return "token:" + hex.EncodeToString(sum[:8])
}

// decodeBody decodes one JSON object into v, answering the error itself.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = &APIError{Field: "body", Message: "one JSON object expected"}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		s.reject(w, r, http.StatusRequestEntityTooLarge, &APIError{Field: "body", Message: fmt.Sprintf("larger than %d bytes", s.cfg.MaxBody)}, nil)
	case errors.As(err, new(*APIError)):
		s.reject(w, r, http.StatusBadRequest, err, nil)
	default:
		s.reject(w, r, http.StatusBadRequest, decodeError(err), nil)
	}
	return false
}

// sessionStatus is the HTTP status of a session operation's error.
func sessionStatus(err error) int {
	var limit *runner.LimitError
	switch {
	case errors.Is(err, runner.ErrSessionNotFound), errors.Is(err, runner.ErrFileNotFound):
		return http.StatusNotFound
	case errors.As(err, &limit):
		return http.StatusTooManyRequests
	case errors.Is(err, runner.ErrSessionPaused), errors.Is(err, runner.ErrNoNetwork), errors.Is(err, runner.ErrNotCheckpointable):
		return http.StatusConflict
	case errors.Is(err, runner.ErrInvalid), errors.Is(err, runner.ErrImageNotFound):
		return requestStatus(err)
	case errors.Is(err, runner.ErrInterrupted):
		return 499
	case fault.Is(err):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) handleSessionCreate(w http.ResponseWriter, r *http.Request) {
	var body SessionRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	body.Runtime = cmp.Or(body.Runtime, s.cfg.Runtime)
	sr, err := body.sessionRequest(s.cfg.Max, owner(r))
	// The next server of this namespace takes it over should this one
	// be killed (AdoptSessions).
	sr.Heir = SessionHeir
	if err == nil {
		var sess runner.Session
		sess, err = s.runner.CreateSession(r.Context(), sr, s.cfg.Max, s.cfg.Sessions)
		if err == nil {
			e := s.sessionEntry(r, audit.EventCreated, sess.ID, http.StatusCreated, "")
			e.Lang, e.Image = sess.Lang, sess.Image
			if req, nerr := sr.Request.NormalizeWithin(s.cfg.Max); nerr == nil && len(req.AllowHosts) > 0 {
				// The allowlist and byte cap the session got.
				e.AllowHosts, e.NetBytes = req.AllowHosts, req.NetBytes
			}
			s.audit.Write(e)
			writeJSON(w, http.StatusCreated, sess)
			return
		}
	}
	code := createStatus(err)
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "10")
	}
	if code >= 500 {
		s.audit.Write(s.sessionEntry(r, audit.EventCreated, "", code, err.Error()))
		writeJSON(w, code, errorAnswer(code, err))
		return
	}
	s.reject(w, r, code, err, &body.RunRequest)
}

// createStatus is the HTTP status of a failed session creation: a session
// ended while it was being made (the server shuts down) is no session
// of the request's that is missing, but a server that cannot make it now.
func createStatus(err error) int {
	var ended *runner.SessionEndedError
	if errors.As(err, &ended) {
		return http.StatusServiceUnavailable
	}
	return sessionStatus(err)
}

func (s *Server) handleSessionRun(w http.ResponseWriter, r *http.Request) {
	s.runs.Add(1)
	defer s.runs.Done()
	id := r.PathValue("id")
	var body CallRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	call, err := body.call(s.cfg.Max)
	if err != nil {
		s.reject(w, r, requestStatus(err), err, nil)
		return
	}
	var stream *ndjsonStream
	if wantsStream(r) {
		stream = newNDJSONStream(w)
		call.Stdout, call.Stderr = stream.writer(stdout), stream.writer(stderr)
	}
	release, queued, ok := s.admit(w, r, nil)
	if !ok {
		return
	}
	defer release()
	ctx, done := s.runContext(r)
	defer done()
	s.metrics.inFlight.Inc()
	start := time.Now()
	res, err := s.runner.RunInSession(ctx, id, owner(r), call, s.cfg.Max)
	s.metrics.inFlight.Dec()
	elapsed := time.Since(start)
	code := http.StatusOK
	if err != nil {
		code = sessionStatus(err)
	}
	e := s.sessionEntry(r, audit.EventCall, id, code, res.Error)
	if body.Code != "" {
		sum := sha256.Sum256([]byte(body.Code))
		e.CodeSHA256 = hex.EncodeToString(sum[:])
	}
	if err == nil || code == 499 {
		e.ID, e.Status, e.Image, e.ExitCode = res.ID, res.Status, res.Image, &res.ExitCode
		e.StdoutTruncated, e.StderrTruncated = res.StdoutTruncated, res.StderrTruncated
		e.Network = res.Network
	}
	e.QueueMs, e.RunMs = ms(queued), ms(elapsed)
	s.audit.Write(e)
	if res.SessionEnded != "" {
		s.audit.Write(s.sessionEnded(r, id, res.SessionEnded, s.runner.EndedNetwork(id)))
	}
	switch {
	case code == 499:
		return
	case err != nil && (stream == nil || !stream.started()):
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "10")
		}
		s.metrics.rejected.WithLabelValues(fmt.Sprint(code)).Inc()
		writeJSON(w, code, sessionAPIError(code, err))
		return
	}
	s.metrics.runs.WithLabelValues(res.Status, "session").Inc()
	if stream != nil {
		stream.finish(res)
		return
	}
	writeJSON(w, code, res)
}

// sessionAPIError is the answer to a session operation that failed with
// code: a 404 names the path's part that names nothing.
func sessionAPIError(code int, err error) *APIError {
	if code == http.StatusNotFound && errors.Is(err, runner.ErrFileNotFound) {
		return &APIError{Field: "path", Message: err.Error()}
	}
	if code == http.StatusNotFound && errors.Is(err, runner.ErrSessionNotFound) {
		return &APIError{Field: "id", Message: err.Error()}
	}
	return errorAnswer(code, err)
}

func (s *Server) handleSessionList(w http.ResponseWriter, r *http.Request) {
	list, err := s.runner.Sessions(r.Context(), owner(r))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorAnswer(http.StatusInternalServerError, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list})
}

func (s *Server) handleSessionDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.runner.RemoveSession(r.Context(), id, owner(r)); err != nil {
		s.answerSessionError(w, r, id, err)
		return
	}
	s.audit.Write(s.sessionEnded(r, id, reaper.EndRemoved, s.runner.EndedNetwork(id)))
	w.WriteHeader(http.StatusNoContent)
}

// answerSessionError answers a failed session operation and logs it.
func (s *Server) answerSessionError(w http.ResponseWriter, r *http.Request, id string, err error) {
	code := sessionStatus(err)
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "10")
	}
	s.metrics.rejected.WithLabelValues(fmt.Sprint(code)).Inc()
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, code, err.Error()))
	writeJSON(w, code, sessionAPIError(code, err))
}

// The file handlers take a path relative to /workspace, or, its first
// slash escaped (%2F), an absolute one anywhere the session's files are
// (runner/contract/session_fs.go).

// pathField names a files/{path} error's field path, the route's own
// parameter, as a missing file's 404 does: the runner's relative-file
// checks speak of a run's files.
func pathField(err error) error {
	var fe *runner.FieldError
	if errors.As(err, &fe) && fe.Field == runner.FieldFiles {
		c := *fe
		c.Field = runner.FieldPath
		return &c
	}
	return err
}

func (s *Server) handleSessionFileGet(w http.ResponseWriter, r *http.Request) {
	id, rel := r.PathValue("id"), r.PathValue("path")
	if strings.HasPrefix(rel, "/") {
		s.serveSessionFile(w, r, id, rel)
		return
	}
	limit := s.cfg.Max.ReturnBytes
	if limit <= 0 {
		limit = runner.DefaultReturnBytes
	}
	data, err := s.runner.ReadSessionFile(r.Context(), id, owner(r), rel, limit)
	if err != nil {
		s.answerSessionError(w, r, id, pathField(err))
		return
	}
	// The bytes as they are: sniffed, a file the code wrote would be
	// served as a page of the server's origin.
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	_, _ = w.Write(data)
}

func (s *Server) handleSessionFilePut(w http.ResponseWriter, r *http.Request) {
	id, rel := r.PathValue("id"), r.PathValue("path")
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		s.reject(w, r, http.StatusRequestEntityTooLarge, &APIError{Field: "body", Message: fmt.Sprintf("larger than %d bytes", s.cfg.MaxBody)}, nil)
		return
	}
	if r.Header.Get("Content-Transfer-Encoding") == "base64" {
		if data, err = base64.StdEncoding.DecodeString(string(data)); err != nil {
			s.reject(w, r, http.StatusBadRequest, &APIError{Field: "body", Message: "not standard base64"}, nil)
			return
		}
	}
	if strings.HasPrefix(rel, "/") {
		_, err = s.runner.WriteSessionPath(r.Context(), id, owner(r), rel, bytes.NewReader(data))
	} else {
		err = s.runner.WriteSessionFile(r.Context(), id, owner(r), rel, data)
	}
	if err != nil {
		s.answerFSError(w, r, id, pathField(err))
		return
	}
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, http.StatusNoContent, ""))
	w.WriteHeader(http.StatusNoContent)
}

// expireSessions ends idle and expired sessions every interval until the
// server shuts down (the idle timeout holds without a call).
func (s *Server) expireSessions(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for _, e := range s.runner.ExpireSessions(ctx) {
			s.audit.Write(s.sessionEnded(nil, e.ID, e.Reason, e.Network))
		}
		cancel()
	}
}

// closeSessions ends the sessions the server holds (at shutdown), but
// for those left to its heir when it hands them over.
func (s *Server) closeSessions(handOver bool) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ended []runner.EndedSession
	var left []string
	if handOver {
		ended, left = s.runner.HandOverSessions(ctx, reaper.EndShutdown)
	} else {
		ended = s.runner.CloseSessions(ctx, "", reaper.EndShutdown)
	}
	for _, e := range ended {
		s.audit.Write(s.sessionEnded(nil, e.ID, e.Reason, e.Network))
	}
	return left
}
