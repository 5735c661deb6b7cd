package e2b

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/audit"
)

// A sandbox made with onTimeout: 'pause' (autoPause): at its timeout it
// is paused, not killed (as pause(): to disk on gVisor where it can be,
// else the session's freezer: no CPU, memory kept), and
// lives on paused until connect resumes it, or, with autoResume, the
// next request to it does. Its session's own lifetime is the server's
// longest (--max-session-lifetime), which ends it in the end.

// autoPause is an auto-pausing sandbox's timer.
type autoPause struct {
	mu     sync.Mutex
	resume bool
	// timeout is what a resume arms it with again; at, when it pauses.
	timeout time.Duration
	at      time.Time
	timer   *time.Timer
	// pausing orders a pause at the timeout and a wake: the session's
	// label says paused before the pause returns, and a request that
	// saw it must wait for sandbox.paused to say so too (else it found
	// the session paused and did not resume it, under load).
	pausing sync.Mutex
}

// arm sets sb to pause d from now, and keeps that for the next server.
func (s *Server) arm(sb *sandbox, d time.Duration) {
	a := sb.auto
	a.mu.Lock()
	a.timeout, a.at = d, time.Now().Add(d)
	if a.timer != nil {
		a.timer.Stop()
	}
	a.timer = time.AfterFunc(d, func() { s.pauseAtTimeout(sb) })
	a.mu.Unlock()
	s.persist(sb)
}

// disarm stops sb's timer (paused, or gone).
func disarm(sb *sandbox) {
	if sb.auto == nil {
		return
	}
	sb.auto.mu.Lock()
	defer sb.auto.mu.Unlock()
	if sb.auto.timer != nil {
		sb.auto.timer.Stop()
	}
}

// pausesAt is when sb pauses (zero when it does not auto-pause).
func (sb *sandbox) pausesAt() time.Time {
	if sb.auto == nil {
		return time.Time{}
	}
	sb.auto.mu.Lock()
	defer sb.auto.mu.Unlock()
	return sb.auto.at
}

// pauseAtTimeout pauses sb at its timeout, and says so in the audit log.
func (s *Server) pauseAtTimeout(sb *sandbox) {
	if sb.killed.Load() {
		return
	}
	sb.auto.pausing.Lock()
	defer sb.auto.pausing.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := audit.Entry{Event: audit.EventPaused, Interface: audit.E2B, Session: sb.ID, Reason: "timeout", HTTPStatus: http.StatusNoContent}
	if err := s.pause(ctx, sb.ID, sb.Caller); err != nil {
		e.Error, e.HTTPStatus = err.Error(), 0
	} else {
		sb.paused.Store(true)
		sb.note("info", "sandbox paused at its timeout", map[string]string{})
	}
	s.cfg.Audit.Write(e)
}

// wake resumes sb for a request to it when it auto-resumes and its
// timeout paused it; false when it could not be.
func (s *Server) wake(r *http.Request, sb *sandbox) bool {
	if sb.auto == nil || !sb.auto.resume {
		return true
	}
	sb.auto.pausing.Lock()
	defer sb.auto.pausing.Unlock()
	if !sb.paused.Load() {
		return true
	}
	if _, err := s.runner.ResumeSession(r.Context(), sb.ID, sb.Caller); err != nil {
		return false
	}
	sb.paused.Store(false)
	s.arm(sb, sb.auto.timeout)
	e := entry(r, audit.EventResumed, sb.ID, http.StatusOK)
	e.Reason = "auto_resume"
	s.cfg.Audit.Write(e)
	return true
}

// lifecycle is E2B's SandboxLifecycle of sb.
func (sb *sandbox) lifecycle() map[string]any {
	if sb.auto == nil {
		return map[string]any{"onTimeout": "kill", "autoResume": false}
	}
	return map[string]any{"onTimeout": "pause", "autoResume": sb.auto.resume}
}

// or is t, or def when t is zero.
func or(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
