package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
)

// A session's files anywhere it may write, over HTTP (docs/http.md,
// "Session files"): /v1/sessions/{id}/fs/VERB, each naming its path
// absolute in the sandbox, under /workspace, /tmp or /home/user. A path
// goes in the query (or the body of a POST), never in the URL's path: it
// is the sandbox's, with slashes of its own.

// PathRequest is the body of POST .../fs/mkdir and .../fs/remove.
type PathRequest struct {
	Path string `json:"path"`
}

// MoveRequest is the body of POST .../fs/move.
type MoveRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ListAnswer is the answer to GET .../fs/list.
type ListAnswer struct {
	Entries []runner.FileEntry `json:"entries"`
}

// WatchLine is one line of GET .../fs/watch: start once the directory is
// watched, then its changes (runner.FileEvent's types), keepalive while
// nothing changes, and end, with the reason, if the watch ends before its
// client leaves (the session ended, the directory was removed).
type WatchLine struct {
	Type  string `json:"type"`
	Path  string `json:"path,omitempty"`
	Name  string `json:"name,omitempty"`
	Error string `json:"error,omitempty"`
}

// watchKeepalive is how often a quiet watch says it is still there.
const watchKeepalive = 15 * time.Second

// fsPath is the request's path query parameter, required.
func fsPath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", &runner.FieldError{Field: runner.FieldPath, Message: "is required: an absolute path in the session, under /workspace, /tmp or " + runner.SessionHome}
	}
	return p, nil
}

// fsStatus is the HTTP status of a failed file operation.
func fsStatus(err error) int {
	var pe *runner.PathError
	switch {
	case errors.As(err, &pe) && errors.Is(err, runner.ErrLeadsOut):
		return http.StatusNotFound
	case errors.As(err, &pe):
		// Not a regular file, too long: the request's path is at fault.
		return http.StatusBadRequest
	case errors.Is(err, runner.ErrFileExists):
		return http.StatusConflict
	case errors.Is(err, runner.ErrSessionFull):
		return http.StatusInsufficientStorage
	}
	return sessionStatus(err)
}

// answerFSError answers a failed file operation and logs it.
func (s *Server) answerFSError(w http.ResponseWriter, r *http.Request, id string, err error) {
	code := fsStatus(err)
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "10")
	}
	s.metrics.rejected.WithLabelValues(fmt.Sprint(code)).Inc()
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, code, err.Error()))
	ae := sessionAPIError(code, err)
	if code == http.StatusConflict {
		ae = &APIError{Field: runner.FieldPath, Message: err.Error()}
	}
	writeJSON(w, code, ae)
}

func (s *Server) handleFSStat(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := fsPath(r)
	var e runner.FileEntry
	if err == nil {
		e, err = s.runner.StatSessionPath(r.Context(), id, owner(r), p)
	}
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) handleFSList(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := fsPath(r)
	depth := 1
	if v := r.URL.Query().Get("depth"); v != "" && err == nil {
		if depth, err = strconv.Atoi(v); err != nil {
			err = &runner.FieldError{Field: "depth", Message: fmt.Sprintf("must be a whole number of levels, not %q", v)}
		}
	}
	var entries []runner.FileEntry
	if err == nil {
		entries, err = s.runner.ListSessionDir(r.Context(), id, owner(r), p, depth)
	}
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, ListAnswer{Entries: entries})
}

func (s *Server) handleFSRead(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := fsPath(r)
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	s.serveSessionFile(w, r, id, p)
}

// serveSessionFile answers the bytes of the file at p (absolute) in
// session id, of at most the server's return_bytes.
func (s *Server) serveSessionFile(w http.ResponseWriter, r *http.Request, id, p string) {
	limit := s.cfg.Max.ReturnBytes
	if limit <= 0 {
		limit = runner.DefaultReturnBytes
	}
	data, err := s.runner.ReadSessionPath(r.Context(), id, owner(r), p, limit)
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	// The bytes as they are: sniffed, a file the code wrote would be
	// served as a page of the server's origin.
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	_, _ = w.Write(data)
}

func (s *Server) handleFSWrite(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := fsPath(r)
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	data, ok := s.fileBody(w, r)
	if !ok {
		return
	}
	e, err := s.runner.WriteSessionPath(r.Context(), id, owner(r), p, bytes.NewReader(data))
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, http.StatusOK, ""))
	writeJSON(w, http.StatusOK, e)
}

// fileBody reads a file's bytes from the body, of at most the server's
// max_body, base64 with Content-Transfer-Encoding: base64; ok is false
// when it answered the request itself.
func (s *Server) fileBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		s.reject(w, r, http.StatusRequestEntityTooLarge, &APIError{Field: "body", Message: fmt.Sprintf("larger than %d bytes", s.cfg.MaxBody)}, nil)
		return nil, false
	}
	if r.Header.Get("Content-Transfer-Encoding") == "base64" {
		if data, err = base64.StdEncoding.DecodeString(string(data)); err != nil {
			s.reject(w, r, http.StatusBadRequest, &APIError{Field: "body", Message: "not standard base64"}, nil)
			return nil, false
		}
	}
	return data, true
}

func (s *Server) handleFSMkdir(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body PathRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	e, made, err := s.runner.MakeSessionDir(r.Context(), id, owner(r), body.Path)
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	code := http.StatusOK
	if made {
		code = http.StatusCreated
	}
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, code, ""))
	writeJSON(w, code, e)
}

func (s *Server) handleFSMove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body MoveRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	e, err := s.runner.MoveSessionPath(r.Context(), id, owner(r), body.From, body.To)
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, http.StatusOK, ""))
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) handleFSRemove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body PathRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	if err := s.runner.RemoveSessionPath(r.Context(), id, owner(r), body.Path); err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	s.audit.Write(s.sessionEntry(r, audit.EventFiles, id, http.StatusNoContent, ""))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleFSWatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := fsPath(r)
	recursive := false
	if v := r.URL.Query().Get("recursive"); v != "" && err == nil {
		if recursive, err = strconv.ParseBool(v); err != nil {
			err = &runner.FieldError{Field: "recursive", Message: fmt.Sprintf("must be true or false, not %q", v)}
		}
	}
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	// A watch ends when its client leaves, or as the server shuts down.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.stopCtx, cancel)
	defer stop()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	done, err := s.runner.HoldStream(owner(r))
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	defer done()
	watch, err := s.runner.WatchSessionDir(ctx, id, owner(r), p, recursive)
	if err != nil {
		s.answerFSError(w, r, id, err)
		return
	}
	stream := newNDJSONStream(w)
	send := func(l WatchLine) bool {
		stream.mu.Lock()
		defer stream.mu.Unlock()
		stream.line(l)
		return stream.err == nil
	}
	defer func() { _ = stream.rc.SetWriteDeadline(time.Time{}) }()
	if !send(WatchLine{Type: "start"}) {
		return
	}
	tick := time.NewTicker(watchKeepalive)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-watch.Events:
			if !ok {
				if err := watch.Err(); err != nil && ctx.Err() == nil {
					send(WatchLine{Type: "end", Error: err.Error()})
				}
				return
			}
			if !send(WatchLine{Type: e.Type, Path: e.Path, Name: e.Name}) {
				return
			}
		case <-tick.C:
			if !send(WatchLine{Type: "keepalive"}) {
				return
			}
		}
	}
}
