package contract

// A session's types, on every platform: its request, a call, their checks.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
)

// Session defaults and caps (docs/reference.md, "Sessions").
const (
	DefaultSessionIdle     = 10 * time.Minute
	DefaultSessionLifetime = time.Hour
	// DefaultMaxSessionLifetime caps a session's lifetime, and the time
	// left a caller may set, unless the operator says otherwise: its
	// sandbox ends itself then (see sessionMeta.shape).
	DefaultMaxSessionLifetime = 24 * time.Hour
	// DefaultMaxSessions is how many sessions may live at once in one
	// containerd namespace unless the operator says otherwise.
	DefaultMaxSessions = 16
	// DefaultReadyMaxAge is how long a ready session waits for a request
	// before it is replaced, unless the operator says otherwise.
	DefaultReadyMaxAge = 2 * time.Minute
)

// Field names of a session request, beside a Request's.
const (
	FieldIdle     = "idle_timeout"
	FieldLifetime = "lifetime"
	FieldSession  = "session_id"
)

// SessionRequest asks for a session: a sandbox that lives across calls,
// shaped and limited by Request (its Timeout and OutputLimit are each
// call's defaults; it has no code of its own).
type SessionRequest struct {
	Request
	// Idle ends the session after this long without a call; Lifetime ends
	// it this long after it was made, whatever happens.
	Idle, Lifetime time.Duration
	// Caller is who the session belongs to: only the same caller may use
	// it (the CLI, as root on the host, may use any).
	Caller string
	// Held sessions end with the process that made them (a server's, an
	// MCP client's); others live on their own until they expire.
	Held bool
	// Heir, for a held session, names who takes it over when its holder
	// is gone ("serve": the next boxer serve of its namespace, see
	// Runner.AdoptSessions): it ends only by its own life, never with a
	// process. Empty: it ends with its holder.
	Heir string
	// NoPreload asks for a session whose interpreter has imported nothing
	// ahead of its calls: it never takes a ready session (those hold a
	// preset's Preload modules).
	NoPreload bool
}

// SessionMaxima are an operator's caps on sessions.
type SessionMaxima struct {
	// Lifetime 0 is DefaultMaxSessionLifetime; Idle 0 is no cap.
	Idle, Lifetime time.Duration
	// Sessions caps the sessions alive at once; 0 is DefaultMaxSessions.
	Sessions int
	// PerCaller caps the sessions one caller holds at once; 0 is a
	// quarter of Sessions, at least 1 (PerCallerSessions).
	PerCaller int
}

// Session describes a live session.
type Session struct {
	ID        string    `json:"id"`
	Lang      string    `json:"lang"`
	Runtime   string    `json:"runtime"`
	Image     string    `json:"image"`
	CreatedAt time.Time `json:"created_at"`
	// Made is CreatedAt as recorded, to the nanosecond (CreatedAt is to
	// the second): what orders sessions made within one second.
	Made        time.Time `json:"-"`
	ExpiresAt   time.Time `json:"expires_at"`
	LastUsed    time.Time `json:"last_used"`
	IdleTimeout Seconds   `json:"idle_timeout_s"`
	// Paused: its sandbox is frozen (PauseSession) since PausedAt; calls
	// wait for ResumeSession, and its idle clock stops.
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"paused_at,omitempty"`
	// Checkpointed: paused, its sandbox saved to disk and ended
	// (CheckpointSession); ResumeSession restores it.
	Checkpointed bool `json:"checkpointed"`
	// Interpreter: calls share one interpreter (python, python-data);
	// otherwise each call is a fresh process and only files persist.
	Interpreter bool `json:"interpreter"`
	// Caller owns it (not shown to callers).
	Caller string `json:"-"`
	// HeldElsewhere: another live process holds it (the server that
	// made it, which still runs beside this one); not shown to callers.
	HeldElsewhere bool `json:"-"`
}

// Seconds is a duration written as seconds in JSON.
type Seconds time.Duration

// MarshalJSON writes whole seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%d", int64(time.Duration(s)/time.Second)), nil
}

// SessionCall is one call in a session.
type SessionCall struct {
	// Code runs in the session's language: in its interpreter (python,
	// python-data) or as a new program.
	Code  []byte
	Stdin io.Reader
	// Timeout and OutputLimit default to the session's.
	Timeout     time.Duration
	OutputLimit int64
	// Files are written into /workspace before the call; ReturnFiles
	// come back after it, as for a run.
	Files       map[string][]byte
	ReturnFiles []string
	ReturnBytes int64
	// Stdout and Stderr receive the output as it comes.
	Stdout io.Writer
	Stderr io.Writer
	// Cell, if set, runs the call as a code interpreter's cell
	// (session_cell.go).
	Cell *Cell
}

// ErrSessionNotFound is returned for a session that does not exist, or
// that belongs to another caller (the two are not told apart).
var ErrSessionNotFound = errors.New("no such session")

// SessionEndedError is a session that ended before the call: its sandbox
// is gone, and the call did not run.
type SessionEndedError struct {
	ID     string
	Reason string
}

func (e *SessionEndedError) Error() string {
	return fmt.Sprintf("session %s has ended (%s): create a new one", e.ID, EndText(e.Reason))
}

// Is makes a SessionEndedError an ErrSessionNotFound: it no longer exists.
func (e *SessionEndedError) Is(target error) bool { return target == ErrSessionNotFound }

// SessionLimitError is a session refused because the cap is reached.
type SessionLimitError struct{ Max int }

func (e *SessionLimitError) Error() string {
	return fmt.Sprintf("%d sessions are open, the most this host allows: close one ('boxer session rm' or DELETE /v1/sessions/{id}) or wait for one to expire", e.Max)
}

// EndText says in words why a session ended.
func EndText(reason string) string {
	switch reason {
	case reaper.EndLifetime:
		return "its lifetime ran out"
	case reaper.EndIdle:
		return "it was idle too long"
	case reaper.EndHolderGone:
		return "the server that held it exited"
	case reaper.EndExited:
		return "its sandbox exited"
	case reaper.EndInterpreter:
		return "its interpreter exited"
	case reaper.EndStuck:
		return "its interpreter did not stop after a call's timeout"
	case reaper.EndWireBroken:
		return "a call wrote into the channel between boxer and its interpreter"
	case reaper.EndRemoved:
		return "it was removed"
	case reaper.EndDisconnect:
		return "its client disconnected"
	case reaper.EndShutdown:
		return "the server shut down"
	case reaper.EndProcServer:
		return "its process server (boxer-procd) exited: a program in it killed it, it ran out of memory, or it broke its channel"
	}
	return reason
}

// Normalize fills in a session request's defaults within max and refuses
// what a session cannot have.
func (sr SessionRequest) Normalize(max Maxima, smax SessionMaxima) (Request, time.Duration, time.Duration, error) {
	req := sr.Request
	if len(req.Code) > 0 {
		return req, 0, 0, FieldErr(FieldCode, "is for a call: a session is made empty, code runs in it with each call")
	}
	if len(req.Args) > 0 {
		return req, 0, 0, FieldErr(FieldCommand, "is not available for sessions: a session runs its language's calls")
	}
	if req.Lang == "" {
		return req, 0, 0, FieldErr(FieldLang, "is required for a session: one of %s", strings.Join(PresetNames(), ", "))
	}
	if req.CopyOut != "" || len(req.ReturnFiles) > 0 {
		return req, 0, 0, FieldErr(FieldReturnFiles, "is for a call, not for making a session")
	}
	req, err := req.NormalizeWithin(max)
	if err != nil {
		return req, 0, 0, err
	}
	idle, lifetime := sr.Idle, sr.Lifetime
	for _, err := range []error{
		capLimit(FieldIdle, &idle, DefaultSessionIdle, smax.Idle),
		capLimit(FieldLifetime, &lifetime, DefaultSessionLifetime, Or(smax.Lifetime, DefaultMaxSessionLifetime)),
	} {
		if err != nil {
			return req, 0, 0, err
		}
	}
	if idle < time.Second || lifetime < time.Second {
		return req, 0, 0, FieldErr(FieldIdle, "and {lifetime} must be at least 1s")
	}
	return req, idle, lifetime, nil
}

// Normalize fills in a call's defaults from its session's request, within
// max.
func (c SessionCall) Normalize(session Request, max Maxima) (SessionCall, error) {
	r := Request{Timeout: Or(c.Timeout, session.Timeout), OutputLimit: Or(c.OutputLimit, session.OutputLimit)}
	for _, err := range []error{
		capLimit(FieldTimeout, &r.Timeout, session.Timeout, max.Timeout),
		capLimit(FieldOutputLimit, &r.OutputLimit, session.OutputLimit, max.OutputLimit),
		CheckLimit(FieldTimeout, float64(r.Timeout)),
		CheckLimit(FieldOutputLimit, float64(r.OutputLimit)),
	} {
		if err != nil {
			return c, err
		}
	}
	c.Timeout, c.OutputLimit = r.Timeout, r.OutputLimit
	c.ReturnBytes = Or(Or(c.ReturnBytes, max.ReturnBytes), DefaultReturnBytes)
	r.ReturnFiles, r.ReturnBytes = c.ReturnFiles, c.ReturnBytes
	return c, r.checkReturnFiles()
}

// EndedSession is a session that ExpireSessions or CloseSessions ended.
type EndedSession struct {
	ID, Caller, Reason string
	// Network is what its network carried over its life (nil: none, or
	// unknown).
	Network *egress.Report
}

// ErrFileNotFound is a session file that is not there, or not a regular
// file where one is read, or one a symlink out of its root leads to.
var ErrFileNotFound = errors.New("no such file in the session")

// ErrNoNetwork is a network operation on a session made without
// allow_hosts.
var ErrNoNetwork = errors.New("the session has no network (it was made without allow_hosts): make a new one with allow_hosts")
