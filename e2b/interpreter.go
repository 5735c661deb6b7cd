package e2b

// The code interpreter's hook (port 49999, package interp): the sandbox a
// request is for, its record, and the listener's answers.

import (
	"context"
	"net/http"

	"github.com/boxer-dev/boxer/e2b/interp"
)

// interpHost is the server as the code interpreter sees it.
type interpHost struct{ s *Server }

var _ interp.Host = interpHost{}

func (h interpHost) Sandbox(ctx context.Context) interp.Sandbox {
	sb := sandboxFrom(ctx)
	return interp.Sandbox{
		ID: sb.ID, Caller: sb.Caller, Lang: sb.Lang, Image: sb.Image, Env: sb.Env,
		Killed:  sb.killed.Load,
		Persist: func() { h.s.persist(sb) },
	}
}

func (h interpHost) Held(id string) bool {
	_, ok := h.s.lookup(id)
	return ok
}

func (interpHost) WriteError(w http.ResponseWriter, code int, msg string) { writeError(w, code, msg) }

func (interpHost) WriteJSON(w http.ResponseWriter, code int, v any) { writeJSON(w, code, v) }

func (interpHost) TooLarge(limit int64) string { return tooLarge(limit) }
