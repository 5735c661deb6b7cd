package reaper

import (
	"errors"
	"os"
	"path/filepath"
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
	// Unix seconds. It may move (a caller sets the time left), so its
	// sandbox does not end itself then but at its backstop, the latest
	// deadline the session may have: every boxer process that finds it
	// past its deadline ends it (see SessionEnd).
	LabelSessionDeadline = "boxer.session.deadline"
	// LabelSessionPaused is when the session was paused (its sandbox
	// frozen), in Unix seconds; absent while it runs. A paused session's
	// idle clock stops: it is not idle, only its deadline ends it.
	LabelSessionPaused = "boxer.session.paused"
	// LabelSessionCheckpointed is when the session was checkpointed (its
	// sandbox saved to disk and ended, its task deleted on purpose: it
	// lives, paused, until it is restored), in Unix seconds.
	LabelSessionCheckpointed = "boxer.session.checkpointed"
	// LabelSessionIdle is its idle timeout in seconds.
	LabelSessionIdle = "boxer.session.idle"
	// LabelSessionUsed is when it was made, in Unix seconds; when it was
	// last used is the modification time of its run directory's
	// sessionUsedFile (during a call, when that call's timeout ends),
	// which a call sets without a round trip to containerd.
	LabelSessionUsed = "boxer.session.used"
	// LabelSessionMade marks a session as made: its maker sets it once
	// the session's sandbox runs and its interpreter is started (a
	// detached session's maker lets go of it in the same update). Until
	// then the session is its maker's alone: while the maker lives, no
	// process (nor the maker's own sweeps) ends, lists or calls it,
	// whatever its task's state; once the maker is gone, it is reaped.
	LabelSessionMade = "boxer.session.made"
	// LabelSessionReady marks a session a server made ahead of requests
	// (a ready session): it stays unmade, its maker's alone, until a
	// request claims it, which removes this label as it marks it made. A
	// ready session is no caller's and counts against no cap; once its
	// maker is gone, it is reaped like any session being made.
	LabelSessionReady = "boxer.session.ready"
	// LabelSessionEnding says why a session is being removed, and
	// LabelSessionEnder which process removes it: a remover sets both
	// before it removes anything, so that another process that finds the
	// session (a second remover, its maker) leaves it to the remover
	// while that lives, and tells the same reason.
	LabelSessionEnding = "boxer.session.ending"
	LabelSessionEnder  = "boxer.session.ender"
	// LabelSessionHeir names who takes over a held session when its
	// holder is gone ("serve": the next boxer serve of its namespace,
	// AdoptableBy): the session does not end with its holder, only by
	// its own life (removed, idle, lifetime), and until it is taken over
	// any boxer process ends it so. A session without it ends with its
	// holder (an MCP client's).
	LabelSessionHeir = "boxer.session.heir"
)

// Orphan says whether a session with these labels was made, is held by a
// process that is gone, and waits for its heir (LabelSessionHeir).
func Orphan(labels map[string]string) bool {
	owner := labels[LabelOwner]
	return owner != "" && labels[LabelSessionHeir] != "" && labels[LabelSessionMade] != "" && labels[LabelSessionReady] == "" && !Alive(owner)
}

// BeingMade says whether a session with these labels is still being made
// by a live process (see LabelSessionMade).
func BeingMade(labels map[string]string) bool {
	owner := labels[LabelOwner]
	return owner != "" && labels[LabelSessionMade] == "" && Alive(owner)
}

// BeingEnded says whether a live process removes the session with these
// labels, and why (see LabelSessionEnding).
func BeingEnded(labels map[string]string) (string, bool) {
	reason := labels[LabelSessionEnding]
	return reason, reason != "" && Alive(labels[LabelSessionEnder])
}

// sessionUsedFile, in a session's run directory, says by its modification
// time when the session was last used.
const sessionUsedFile = "used"

// SessionUsed is when the session whose run directory is runDir was last
// used, as TouchSession set it; zero if it never was.
func SessionUsed(runDir string) time.Time {
	fi, err := os.Stat(filepath.Join(runDir, sessionUsedFile))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// TouchSession sets when the session whose run directory is runDir was
// last used.
func TouchSession(runDir string, t time.Time) error {
	file := filepath.Join(runDir, sessionUsedFile)
	err := os.Chtimes(file, t, t)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.WriteFile(file, nil, 0o600); err == nil {
			err = os.Chtimes(file, t, t)
		}
	}
	return err
}

// LastUsed is when a session was last used: its labels' time, or its run
// directory's, whichever is later.
func LastUsed(labels map[string]string, runDir string) time.Time {
	used := time.Time{}
	if secs, err := strconv.ParseInt(labels[LabelSessionUsed], 10, 64); err == nil {
		used = time.Unix(secs, 0)
	}
	if t := SessionUsed(runDir); t.After(used) {
		used = t
	}
	return used
}

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
	EndProcServer  = "process_server_exited"
)

// SessionEnd says whether a session with these labels, last used at used
// (LastUsed), is over at now, and why: being removed, held (or being
// made) by a process that is gone, past its deadline, idle too long (not
// while paused), or (a detached one) its sandbox no longer runs. A session being made by a
// live process lives, whatever its timeouts and its task's state: it is
// its maker's. running is asked last, as it costs a round trip; a held
// session's sandbox is its holder's to watch. "" means the session lives.
//
// labels may be older than the verdict (a list's): a process that acts on
// a verdict to end a session takes it again on labels read afterwards.
// Only a maker changes a session's owner, and only to none, and a process
// found dead stays dead: so a verdict on labels read after one found the
// owner dead is final.
func SessionEnd(labels map[string]string, used, now time.Time, running func() bool) string {
	if reason := labels[LabelSessionEnding]; reason != "" {
		return reason
	}
	owner := labels[LabelOwner]
	if Orphan(labels) {
		// Its heir takes it over; meanwhile it lives as one nobody
		// holds.
		owner = ""
	} else if owner != "" && !Alive(owner) {
		return EndHolderGone
	}
	if owner != "" && labels[LabelSessionMade] == "" {
		return ""
	}
	if d, err := strconv.ParseInt(labels[LabelSessionDeadline], 10, 64); err != nil || !now.Before(time.Unix(d, 0)) {
		return EndLifetime
	}
	idle, err := strconv.ParseInt(labels[LabelSessionIdle], 10, 64)
	if labels[LabelSessionPaused] == "" && (err != nil || !now.Before(used.Add(time.Duration(idle)*time.Second))) {
		return EndIdle
	}
	if owner == "" && running != nil && !running() {
		return EndExited
	}
	return ""
}
