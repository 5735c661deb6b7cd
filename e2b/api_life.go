package e2b

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/runner"
)

// A sandbox's life: its timeout, pause, resume (connect) and figures.

// timeoutBody is the body of POST /sandboxes/{id}/timeout and of connect.
type timeoutBody struct {
	Timeout *int64 `json:"timeout"`
	// Memory is connect's "resume from memory" (false: reboot).
	Memory *bool `json:"memory"`
}

func (s *Server) handleTimeout(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body timeoutBody
	if !s.decode(w, r, &body) {
		return
	}
	if body.Timeout == nil || *body.Timeout <= 0 {
		writeError(w, http.StatusBadRequest, "timeout: must be a positive number of seconds")
		return
	}
	if err := s.setTimeout(r.Context(), callerOf(r), id, *body.Timeout); err != nil {
		s.refuse(w, r, audit.EventTimeout, id, err)
		return
	}
	s.audited(r, audit.EventTimeout, id, http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setTimeout(ctx context.Context, caller, id string, seconds int64) error {
	sb, _, err := s.find(ctx, caller, id)
	if err != nil {
		return err
	}
	if sb.auto != nil {
		// Its timeout is when it pauses; a paused one is armed when
		// it resumes.
		if !sb.paused.Load() {
			s.arm(sb, time.Duration(seconds)*time.Second)
		} else {
			sb.auto.mu.Lock()
			sb.auto.timeout = time.Duration(seconds) * time.Second
			sb.auto.mu.Unlock()
			s.persist(sb)
		}
		return nil
	}
	_, err = s.runner.SetSessionTimeout(ctx, id, caller, time.Duration(seconds)*time.Second, s.cfg.Sessions)
	return err
}

func (s *Server) handlePause(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body timeoutBody
	if !s.decode(w, r, &body) {
		return
	}
	sb, sess, err := s.find(r.Context(), callerOf(r), id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	toDisk := body.Memory != nil && !*body.Memory
	if toDisk {
		if err := s.toDisk("memory", sb.Linked); err != nil {
			s.answerError(w, id, err)
			return
		}
	}
	if sess.Paused {
		writeError(w, http.StatusConflict, fmt.Sprintf("sandbox %s is already paused", id))
		return
	}
	pause := s.pause
	if toDisk {
		pause = s.checkpoint
	}
	if err := pause(r.Context(), id, callerOf(r)); err != nil {
		s.refuse(w, r, audit.EventPaused, id, err)
		return
	}
	if sb, ok := s.lookup(id); ok {
		sb.paused.Store(true)
		disarm(sb)
	}
	s.audited(r, audit.EventPaused, id, http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

// pause pauses sandbox id of caller: to disk, a checkpoint that frees its
// memory, where it can be (gVisor, no network, no secrets: see
// docs/runtimes.md); else the session's freezer, its memory kept. Connect
// (ResumeSession) brings back either.
func (s *Server) pause(ctx context.Context, id, caller string) error {
	_, err := s.runner.CheckpointSession(ctx, id, caller)
	if errors.Is(err, runner.ErrNotCheckpointable) {
		_, err = s.runner.PauseSession(ctx, id, caller)
	}
	return err
}

// checkpoint pauses sandbox id of caller to disk, or says why it cannot
// (keepMemory: false), naming the field.
func (s *Server) checkpoint(ctx context.Context, id, caller string) error {
	_, err := s.runner.CheckpointSession(ctx, id, caller)
	if errors.Is(err, runner.ErrNotCheckpointable) {
		// A 400, not E2B's 409, which the SDKs read as "already paused".
		return &badField{"memory", "false (keepMemory: false) pauses the sandbox to disk, and " + err.Error()}
	}
	return err
}

// toDisk says why a sandbox cannot pause to disk, as field asks (E2B's
// keepMemory: false): on runc there is no checkpoint, nor with network.
// On gVisor a pause is a checkpoint to disk, its memory freed; its
// resume brings the memory back too.
func (s *Server) toDisk(field string, linked bool) error {
	switch {
	case s.cfg.Runtime != "runsc":
		return &badField{field, "false (keepMemory: false) needs a pause to disk, which needs gVisor (boxer serve --runtime runsc): on runc a paused sandbox keeps its memory"}
	case linked:
		return &badField{field, "false (keepMemory: false) needs a pause to disk, and a sandbox with network cannot be checkpointed (its link would not come back)"}
	}
	return nil
}

// handleConnect resumes a paused sandbox (or finds a running one) and
// answers as create does, so the SDK connects to it.
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	id, caller := r.PathValue("id"), callerOf(r)
	var body timeoutBody
	if !s.decode(w, r, &body) {
		return
	}
	if body.Memory != nil && !*body.Memory {
		writeError(w, http.StatusBadRequest, "memory: is not supported by boxer: a sandbox resumes from memory (a reboot is a new sandbox)")
		return
	}
	sb, sess, err := s.find(r.Context(), caller, id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	code := http.StatusOK
	if sess.Paused {
		if _, err := s.runner.ResumeSession(r.Context(), id, caller); err != nil {
			s.refuse(w, r, audit.EventResumed, id, err)
			return
		}
		code = http.StatusCreated
		s.audited(r, audit.EventResumed, id, code)
		sb.paused.Store(false)
		if sb.auto != nil {
			sb.auto.mu.Lock()
			d := sb.auto.timeout
			sb.auto.mu.Unlock()
			s.arm(sb, d)
		}
	}
	// Connect only extends a sandbox's time, as E2B's does; resume sets it.
	extendOnly := strings.HasSuffix(r.URL.Path, "/connect")
	if body.Timeout != nil && *body.Timeout > 0 && (!extendOnly || time.Now().Add(time.Duration(*body.Timeout)*time.Second).After(or(sb.pausesAt(), sess.ExpiresAt))) {
		if err := s.setTimeout(r.Context(), caller, id, *body.Timeout); err != nil {
			s.answerError(w, id, err)
			return
		}
	}
	writeJSON(w, code, s.created(sb, s.domainOf(r)))
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	id, caller := r.PathValue("id"), callerOf(r)
	sb, _, err := s.find(r.Context(), caller, id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	from, to, err := metricsRange(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	st, err := s.runner.SessionStats(r.Context(), id, caller)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	if st.At.Unix() < from || to > 0 && st.At.Unix() > to {
		// boxer keeps no history: its one sample, now, is outside.
		writeJSON(w, http.StatusOK, []map[string]any{})
		return
	}
	// CPU use is the average since the sandbox started, of its CPUs.
	pct := 0.0
	if el := st.At.Sub(sb.Started).Seconds(); el > 0 && sb.CPUs > 0 {
		pct = 100 * st.CPUTimeMs / 1000 / el / sb.CPUs
	}
	writeJSON(w, http.StatusOK, []map[string]any{{
		"timestamp":     st.At.UTC().Format(time.RFC3339Nano),
		"timestampUnix": st.At.Unix(),
		"cpuCount":      sb.CPUs,
		"cpuUsedPct":    pct,
		"memUsed":       st.MemoryBytes,
		"memTotal":      st.MemoryLimitBytes,
		"diskUsed":      st.DiskUsedBytes,
		"diskTotal":     st.DiskLimitBytes,
	}})
}

// metricsRange reads getMetrics' start and end (Unix seconds; 0: open).
func metricsRange(q url.Values) (from, to int64, err error) {
	for _, p := range []struct {
		name string
		v    *int64
	}{{"start", &from}, {"end", &to}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, 0, fmt.Errorf("%s: must be a time in Unix seconds, not %q", p.name, quote.Cut(v))
			}
			*p.v = n
		}
	}
	if to > 0 && to < from {
		return 0, 0, fmt.Errorf("end: must not be before start (%d < %d)", to, from)
	}
	return from, to, nil
}
