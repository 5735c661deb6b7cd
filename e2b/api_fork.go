package e2b

// Fork: new sandboxes from a running one's state (boxer's session fork).

import (
	"context"
	"fmt"
	"net/http"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/e2b/interp"
	"github.com/boxer-dev/boxer/runner"
)

// forkTimeout is a fork's timeout, in seconds, when the request gives
// none: E2B's API's default.
const forkTimeout = 15

// forkBody is the body of POST /sandboxes/{id}/fork.
type forkBody struct {
	Timeout *int64 `json:"timeout"`
	Count   *int   `json:"count"`
}

// handleFork makes count sandboxes from sandbox id's state, each a fork of
// its session (on gVisor: docs/runtimes.md): its memory, processes and
// files as they are now, and nothing shared after. Each is the caller's,
// with the source's template, variables, metadata and lifecycle, tokens of
// its own, and the timeout given (E2B's default, 15 s, when none is). The
// answer is E2B's list of results, each a sandbox.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	id, caller := r.PathValue("id"), callerOf(r)
	var body forkBody
	if !s.decode(w, r, &body) {
		return
	}
	count := 1
	if body.Count != nil {
		count = *body.Count
	}
	if count < 1 || count > runner.MaxForks {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("count: must be 1 to %d", runner.MaxForks))
		return
	}
	timeout := int64(forkTimeout)
	if body.Timeout != nil {
		timeout = *body.Timeout
	}
	if timeout <= 0 {
		writeError(w, http.StatusBadRequest, "timeout: must be a positive number of seconds")
		return
	}
	src, _, err := s.find(r.Context(), caller, id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	forks, err := s.runner.ForkSession(r.Context(), id, caller, count, true, s.cfg.Sessions)
	if err != nil {
		s.refuse(w, r, audit.EventForked, id, err)
		return
	}
	results := make([]map[string]any, 0, len(forks))
	for _, f := range forks {
		sb := s.adoptFork(r.Context(), src, s.interp.Contexts(src.ID), f, timeout)
		sb.note("info", "sandbox forked", map[string]string{"from": id})
		e := entry(r, audit.EventForked, sb.ID, http.StatusCreated)
		e.Lang, e.Image, e.Reason = sb.Lang, sb.Image, "from "+id
		s.cfg.Audit.Write(e)
		results = append(results, map[string]any{"sandbox": s.created(sb, s.domainOf(r))})
	}
	writeJSON(w, http.StatusCreated, results)
}

// adoptFork makes fork f of src a sandbox of this server: src's record
// with f's ID, tokens of its own, src's code contexts, and its time.
func (s *Server) adoptFork(ctx context.Context, src *sandbox, contexts []interp.CodeContext, f runner.Session, timeout int64) *sandbox {
	sb := &sandbox{
		ID: f.ID, Caller: src.Caller, Template: src.Template, Alias: src.Alias, Lang: src.Lang,
		Env: src.Env, Metadata: src.Metadata, Public: src.Public, Started: f.Made,
		CPUs: src.CPUs, MemoryMB: src.MemoryMB, DiskMB: src.DiskMB,
		AllowHosts: src.AllowHosts, Linked: src.Linked, NetBytes: src.NetBytes, Image: src.Image,
	}
	sb.EnvdToken, sb.TrafficToken = s.records.tokens(sb.ID)
	s.interp.Adopt(sb.ID, contexts)
	s.mu.Lock()
	s.boxes[sb.ID] = sb
	s.mu.Unlock()
	if src.auto != nil {
		src.auto.mu.Lock()
		d := src.auto.timeout
		src.auto.mu.Unlock()
		sb.auto = &autoPause{resume: src.auto.resume}
		s.arm(sb, d)
	}
	if err := s.setTimeout(ctx, sb.Caller, sb.ID, timeout); err != nil {
		// It lives with the source's time left, as a fork does.
		s.cfg.Warn(fmt.Errorf("fork %s: setting its timeout: %w", sb.ID, err))
	}
	s.persist(sb)
	return sb
}
