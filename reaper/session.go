package reaper

import (
	"strconv"
	"time"
)

// Labels on a session's container, besides LabelSandbox. A session's
// LabelOwner is the process that holds it (a server, whose sessions end
// with it), or empty once a CLI made it: a detached session lives on its
// own until its deadline, its idle timeout, or 'boxer session rm'.
const (
	// LabelSession marks a sandbox as a session; its value is the caller
	// the session belongs to.
	LabelSession = "boxer.session"
	// LabelSessionLang is the session's language.
	LabelSessionLang = "boxer.session.lang"
	// LabelSessionDeadline is when the session ends whatever happens, in
	// Unix seconds: its sandbox ends itself then.
	LabelSessionDeadline = "boxer.session.deadline"
	// LabelSessionIdle is its idle timeout in seconds.
	LabelSessionIdle = "boxer.session.idle"
	// LabelSessionUsed is when it was last used, in Unix seconds; during a
	// call, when that call's timeout ends.
	LabelSessionUsed = "boxer.session.used"
)

// Why a session ended, as results, 'boxer session ls' and the audit log say.
const (
	EndLifetime    = "lifetime"
	EndIdle        = "idle"
	EndHolderGone  = "holder_exited"
	EndExited      = "sandbox_exited"
	EndInterpreter = "interpreter_exited"
	EndStuck       = "interpreter_stuck"
	EndWireBroken  = "interpreter_wire_broken"
	EndRemoved     = "removed"
	EndDisconnect  = "client_disconnected"
	EndShutdown    = "server_shutdown"
)

// SessionEnd says whether a session with these labels is over at now, and
// why: past its deadline, idle too long, held by a process that is gone,
// or (a detached one) its sandbox no longer runs. running is asked last, as
// it costs a round trip; a held session's sandbox is its holder's to watch
// (it may be being made). "" means the session lives.
func SessionEnd(labels map[string]string, now time.Time, running func() bool) string {
	owner := labels[LabelOwner]
	if owner != "" && !Alive(owner) {
		return EndHolderGone
	}
	if d, err := strconv.ParseInt(labels[LabelSessionDeadline], 10, 64); err != nil || !now.Before(time.Unix(d, 0)) {
		return EndLifetime
	}
	used, err1 := strconv.ParseInt(labels[LabelSessionUsed], 10, 64)
	idle, err2 := strconv.ParseInt(labels[LabelSessionIdle], 10, 64)
	if err1 != nil || err2 != nil || !now.Before(time.Unix(used+idle, 0)) {
		return EndIdle
	}
	if owner == "" && running != nil && !running() {
		return EndExited
	}
	return ""
}
