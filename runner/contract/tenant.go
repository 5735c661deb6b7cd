package contract

// What each caller holds on the host at once, counted against its
// ceilings, so that one caller cannot take what all callers share.

import (
	"fmt"
	"sync"
)

// Per-caller ceilings unless the operator says otherwise (docs/reference.md,
// "boxer serve").
const (
	// DefaultWatchesPerCaller: each watch is an inotify instance of the
	// host's root, of which the kernel allows 128 by default
	// (fs.inotify.max_user_instances).
	DefaultWatchesPerCaller = 16
	// DefaultStreamsPerCaller counts the streams a caller holds open: run
	// and exec output, process output, watches.
	DefaultStreamsPerCaller = 32
	// DefaultProcessesPerCaller counts a caller's background processes
	// that run and its calls in flight, across its sessions.
	DefaultProcessesPerCaller = 64
	// sessionShare is the share of --max-sessions one caller may hold
	// unless the operator says otherwise: a quarter, at least 1.
	sessionShare = 4
	// inotifyHeadroom is what the server's watches leave of root's inotify
	// instances for everything else on the host: at least a half.
	inotifyHeadroom = 2
)

// Ceilings are an operator's caps on what one caller holds on the host
// at once, and on the watches of all callers; 0 is the default.
type Ceilings struct {
	WatchesPerCaller   int
	StreamsPerCaller   int
	ProcessesPerCaller int
	// Watches caps the watches of all callers together; 0 is half of the
	// kernel's fs.inotify.max_user_instances, and more is lowered to it.
	Watches int
}

// Held is a kind of thing a caller holds on the host.
type Held int

// The kinds a caller holds.
const (
	HeldWatch Held = iota
	HeldStream
	HeldProcess
	heldKinds
)

// limit names a kind's ceiling as the operator sets it, and what it counts.
func (h Held) limit() (flag, what string) {
	switch h {
	case HeldWatch:
		return "max-watches-per-caller", "watches"
	case HeldStream:
		return "max-streams-per-caller", "streams"
	}
	return "max-processes-per-caller", "processes"
}

// LimitError is a request refused because a ceiling is reached: Limit
// names it (its serve flag), Max is its value. Server: it is the
// server's, of all callers together, not the caller's own.
type LimitError struct {
	Limit  string
	Max    int
	What   string
	Server bool
}

func (e *LimitError) Error() string {
	if e.Server {
		return fmt.Sprintf("%d %s are open on this server, the most it allows (%s %d): close one, or retry later", e.Max, e.What, e.Limit, e.Max)
	}
	return fmt.Sprintf("%d %s are open for this caller, the most one caller may hold (%s %d): close one first", e.Max, e.What, e.Limit, e.Max)
}

// As makes the cap on all sessions a LimitError too.
func (e *SessionLimitError) As(target any) bool {
	le, ok := target.(**LimitError)
	if ok {
		*le = &LimitError{Limit: "max-sessions", Max: e.Max, What: "sessions", Server: true}
	}
	return ok
}

// PerCallerSessions is the sessions one caller may hold at once under m.
func (m SessionMaxima) PerCallerSessions() int {
	if m.PerCaller > 0 {
		return m.PerCaller
	}
	return max(1, Or(m.Sessions, DefaultMaxSessions)/sessionShare)
}

// PerCaller is the ceiling of kind h for one caller.
func (c Ceilings) PerCaller(h Held) int {
	switch h {
	case HeldWatch:
		return Or(c.WatchesPerCaller, DefaultWatchesPerCaller)
	case HeldStream:
		return Or(c.StreamsPerCaller, DefaultStreamsPerCaller)
	}
	return Or(c.ProcessesPerCaller, DefaultProcessesPerCaller)
}

// ServerWatches is the ceiling on all callers' watches, given the
// kernel's max_user_instances (0: unknown).
func (c Ceilings) ServerWatches(instances int) int {
	top := max(1, instances/inotifyHeadroom)
	if instances <= 0 {
		top = 64
	}
	if c.Watches > 0 && c.Watches < top {
		return c.Watches
	}
	return top
}

// Tally counts what callers hold, by kind.
type Tally struct {
	mu     sync.Mutex
	held   [heldKinds]map[string]int
	totals [heldKinds]int
}

// Take counts one h of caller, refusing it when the caller holds
// perCaller (less others, held elsewhere) or all callers total (0: no
// cap) already. The caller "" (the CLI, root on the host) has no
// ceiling of its own. release, once, gives it back.
func (t *Tally) Take(h Held, caller string, perCaller, others, total int) (release func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[h] == nil {
		t.held[h] = map[string]int{}
	}
	flag, what := h.limit()
	if caller != "" && t.held[h][caller]+others >= perCaller {
		return nil, &LimitError{Limit: flag, Max: perCaller, What: what}
	}
	if total > 0 && t.totals[h] >= total {
		return nil, &LimitError{Limit: "max-" + what, Max: total, What: what, Server: true}
	}
	t.held[h][caller]++
	t.totals[h]++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.held[h][caller]--; t.held[h][caller] <= 0 {
				delete(t.held[h], caller)
			}
			t.totals[h]--
		})
	}, nil
}

// count is how many h caller holds.
func (t *Tally) count(h Held, caller string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held[h][caller]
}
