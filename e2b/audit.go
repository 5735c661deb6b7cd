package e2b

// A sandbox's life in the audit log (package audit): its creation with
// its allowlist, a change of its list, its pause, resume, timeout and
// kill, each named by its caller, in boxer's schema.

import (
	"context"
	"net/http"

	"github.com/boxer-dev/boxer/audit"
)

// auditCallerKey carries the caller's name for the audit log.
type auditCallerKey struct{}

// withAuditCaller names the caller of r as boxer's HTTP API names one:
// its address, and a hash of the bearer form of its key (the same as
// for that key given to boxer's API as a token), never the key.
func withAuditCaller(ctx context.Context, r *http.Request, key string) context.Context {
	return context.WithValue(ctx, auditCallerKey{}, audit.Caller(r.RemoteAddr, "Bearer "+key))
}

// entry is an audit line about sandbox id.
func entry(r *http.Request, event, id string, code int) audit.Entry {
	c, _ := r.Context().Value(auditCallerKey{}).(string)
	return audit.Entry{Event: event, Interface: audit.E2B, Caller: c, Session: id, HTTPStatus: code}
}

// audited writes the line of an event that went through.
func (s *Server) audited(r *http.Request, event, id string, code int) {
	s.cfg.Audit.Write(entry(r, event, id, code))
	if msg, ok := eventNotes[event]; ok {
		if sb, ok := s.lookup(id); ok {
			sb.note("info", msg, map[string]string{})
		}
	}
}

// refuse answers err as answerError does and writes the line of the
// event it refused.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, event, id string, err error) {
	sw := &statusWriter{ResponseWriter: w}
	s.answerError(sw, id, err)
	e := entry(r, event, id, sw.code)
	e.Error = err.Error()
	s.cfg.Audit.Write(e)
}

// statusWriter records the status answered.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}
