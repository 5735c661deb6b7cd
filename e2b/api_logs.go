package e2b

// A sandbox's logs (E2B's GET /sandboxes/{id}/logs and its v2): what
// boxer's server saw of it (made, paused, resumed, its timeout set, a
// snapshot of it) and its processes' starts and ends with their exit
// codes, newest kept.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/internal/quote"
)

const (
	// maxLogEvents bounds a sandbox's kept events (its ring): the oldest
	// go first.
	maxLogEvents = 200
	// maxLogLines bounds the lines one answer gives (limit's most).
	maxLogLines = 1000
	// maxLogField bounds a field of a line (a command's arguments).
	maxLogField = 512
	// logLogger is the logger every line names (the CLI prints it).
	logLogger = "boxer"
)

// logEntry is a line of a sandbox's logs.
type logEntry struct {
	at     time.Time
	level  string
	msg    string
	fields map[string]string
}

// logRing keeps a sandbox's last maxLogEvents events.
type logRing struct {
	mu      sync.Mutex
	entries []logEntry
}

func (l *logRing) add(e logEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == maxLogEvents {
		l.entries = slices.Delete(l.entries, 0, 1)
	}
	l.entries = append(l.entries, e)
}

func (l *logRing) all() []logEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// note keeps an event of sb in its logs.
func (sb *sandbox) note(level, msg string, fields map[string]string) {
	for k, v := range fields {
		fields[k] = cutField(v)
	}
	sb.logs.add(logEntry{at: time.Now(), level: level, msg: msg, fields: fields})
}

func cutField(v string) string {
	if len(v) > maxLogField {
		return v[:maxLogField] + "…"
	}
	return v
}

// eventNotes are the audited events a sandbox's logs say, by event.
var eventNotes = map[string]string{
	"session_paused":  "sandbox paused",
	"session_resumed": "sandbox resumed",
	"session_timeout": "sandbox timeout set",
}

// logLevels orders E2B's levels.
var logLevels = []string{"debug", "info", "warn", "error"}

// sandboxLogs are sandbox sb's log lines, oldest first: when it was made,
// its events, and its processes' starts and ends (none while it is
// paused to disk: boxer reads them from its processes' keeper).
func (s *Server) sandboxLogs(r *http.Request, sb *sandbox) []logEntry {
	out := []logEntry{{at: sb.Started, level: "info", msg: "sandbox created", fields: map[string]string{"template": sb.Template}}}
	out = append(out, sb.logs.all()...)
	procs, _ := s.runner.Processes(r.Context(), sb.ID, sb.Caller)
	for _, p := range procs {
		cmd := cutField(strings.Join(p.Args, " "))
		pid := strconv.Itoa(p.PID)
		out = append(out, logEntry{at: p.Started, level: "info", msg: "process started", fields: map[string]string{"pid": pid, "cmd": cmd}})
		if p.Running {
			continue
		}
		e := logEntry{at: p.Ended, level: "info", msg: "process ended", fields: map[string]string{"pid": pid, "cmd": cmd, "exit_code": strconv.Itoa(deref(p.ExitCode))}}
		switch {
		case p.Error != "":
			e.level, e.fields["error"] = "error", cutField(p.Error)
		case deref(p.ExitCode) != 0:
			e.level = "warn"
		}
		if e.at.IsZero() {
			e.at = p.Started
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b logEntry) int { return a.at.Compare(b.at) })
	return out
}

// entryJSON is a line as E2B's SandboxLogEntry.
func entryJSON(e logEntry) map[string]any {
	fields := map[string]string{"logger": logLogger}
	for k, v := range e.fields {
		fields[k] = v
	}
	return map[string]any{"timestamp": e.at.UTC().Format(time.RFC3339Nano), "level": e.level, "message": e.msg, "fields": fields}
}

// logParam reads a query parameter that is a whole number of at least
// lowest; def when absent.
func logParam(r *http.Request, name string, def, lowest, highest int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lowest || n > highest {
		return 0, fmt.Errorf("%s: must be a whole number from %d to %d, not %q", name, lowest, highest, quote.Cut(v))
	}
	return n, nil
}

// readLogs reads the parameter from (Unix milliseconds; def when
// absent) and limit, and the caller's sandbox's log lines; false once it
// has answered.
func (s *Server) readLogs(w http.ResponseWriter, r *http.Request, from string, def int64) (lines []logEntry, at, limit int64, ok bool) {
	id := r.PathValue("id")
	at, err := logParam(r, from, def, 0, 1<<53)
	if err == nil {
		limit, err = logParam(r, "limit", maxLogLines, 0, maxLogLines)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, 0, 0, false
	}
	sb, _, err := s.find(r.Context(), callerOf(r), id)
	if err != nil {
		s.answerError(w, id, err)
		return nil, 0, 0, false
	}
	return s.sandboxLogs(r, sb), at, limit, true
}

// handleLogs answers E2B's v1 logs: from start (Unix milliseconds) on,
// oldest first, limit at most; each line also as JSON (what E2B's CLI
// prints).
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	lines, start, limit, ok := s.readLogs(w, r, "start", 0)
	if !ok {
		return
	}
	logs, entries := []map[string]any{}, []map[string]any{}
	for _, e := range lines {
		if e.at.UnixMilli() < start || int64(len(logs)) >= limit {
			continue
		}
		line := map[string]string{"level": e.level, "logger": logLogger, "message": e.msg}
		for k, v := range e.fields {
			line[k] = v
		}
		b, _ := json.Marshal(line)
		j := entryJSON(e)
		logs = append(logs, map[string]any{"timestamp": j["timestamp"], "line": string(b)})
		entries = append(entries, j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"logs": logs, "logEntries": entries})
}

// handleLogsV2 answers E2B's v2 logs: forward (oldest first, from cursor
// on) or backward (newest first, up to cursor), at least level, with
// search in the message, limit at most.
func (s *Server) handleLogsV2(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	dir := q.Get("direction")
	if dir == "" {
		dir = "forward"
	}
	level := q.Get("level")
	switch {
	case dir != "forward" && dir != "backward":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("direction: must be forward or backward, not %q", quote.Cut(dir)))
		return
	case level != "" && !slices.Contains(logLevels, level):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("level: must be one of %s, not %q", strings.Join(logLevels, ", "), quote.Cut(level)))
		return
	}
	lines, cursor, limit, ok := s.readLogs(w, r, "cursor", -1)
	if !ok {
		return
	}
	if dir == "backward" {
		slices.Reverse(lines)
	}
	out := []map[string]any{}
	for _, e := range lines {
		ms := e.at.UnixMilli()
		switch {
		case int64(len(out)) >= limit:
		case cursor >= 0 && (dir == "forward" && ms < cursor || dir == "backward" && ms > cursor):
		case level != "" && slices.Index(logLevels, e.level) < slices.Index(logLevels, level):
		case !strings.Contains(e.msg, q.Get("search")):
		default:
			out = append(out, entryJSON(e))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"logs": out})
}
