package contract

// A session's processes, on every platform: what starting one asks, what
// listing them says, and what following one's output gets.

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// Field names of a process request.
const (
	FieldArgs   = "args"
	FieldCwd    = "cwd"
	FieldTag    = "tag"
	FieldPTY    = "pty"
	FieldSignal = "signal"
)

// Process limits (docs/reference.md, "Processes").
const (
	// DefaultRingBytes is how much of a process's output its session
	// keeps for a later attach: the last MiB, stdout and stderr together.
	DefaultRingBytes = 1 << 20
	// MaxProcesses caps the processes a session's keeper tracks at once,
	// running or ended and not yet forgotten; the oldest ended ones are
	// forgotten first.
	MaxProcesses = 64
	maxTagLen    = 128
)

// ProcessRequest starts a command in a session, as the sandbox's user,
// under the session's limits.
type ProcessRequest struct {
	// Args is the command, found on the sandbox's PATH; no shell unless
	// it names one.
	Args []string `json:"args"`
	// Env adds to the session's environment (NAME=value).
	Env []string `json:"env,omitempty"`
	// Cwd is where it starts; default /workspace.
	Cwd string `json:"cwd,omitempty"`
	// Tag names it for a later list, attach or kill.
	Tag string `json:"tag,omitempty"`
	// Stdin keeps its stdin open for SendStdin; otherwise it reads an
	// empty stdin.
	Stdin bool `json:"stdin,omitempty"`
	// PTY runs it on a terminal of this size (stdout and stderr are one
	// stream then).
	PTY *TermSize `json:"pty,omitempty"`
}

// TermSize is a terminal's size in characters.
type TermSize struct {
	Cols uint32 `json:"cols"`
	Rows uint32 `json:"rows"`
}

// ProcessInfo is a process of a session, running or ended.
type ProcessInfo struct {
	// ID is the session's own number for it; PID its PID in the sandbox.
	ID      int       `json:"id"`
	PID     int       `json:"pid"`
	Tag     string    `json:"tag,omitempty"`
	Args    []string  `json:"args"`
	Env     []string  `json:"env,omitempty"`
	Cwd     string    `json:"cwd"`
	PTY     bool      `json:"pty,omitempty"`
	Started time.Time `json:"started_at"`
	Running bool      `json:"running"`
	// ExitCode is set once it has ended: 128+N for a death by signal N.
	ExitCode *int      `json:"exit_code,omitempty"`
	Ended    time.Time `json:"ended_at,omitzero"`
	// Error says why it could not run, if so.
	Error string `json:"error,omitempty"`
}

// Stream names of a process's output.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	// StreamPTY is a terminal's output: stdout and stderr together.
	StreamPTY = "pty"
)

// ProcessEvent is a piece of a process's output, or its end.
type ProcessEvent struct {
	// Stream and Data: output, in the order it came.
	Stream string `json:"stream,omitempty"`
	Data   []byte `json:"data,omitempty"`
	// Dropped is output that left the ring before this attach read it.
	Dropped int64 `json:"dropped,omitempty"`
	// Start is the process, sent first; End is it once it has ended.
	Start *ProcessInfo `json:"start,omitempty"`
	End   *ProcessInfo `json:"end,omitempty"`
}

// ErrProcessNotFound is a process number or tag the session does not have.
var ErrProcessNotFound = errors.New("no such process in the session")

// Check refuses what cannot start.
func (p *ProcessRequest) Check() error {
	if len(p.Args) == 0 || p.Args[0] == "" {
		return FieldErr(FieldArgs, "is required: the command and its arguments")
	}
	for _, a := range p.Args {
		if strings.ContainsRune(a, 0) {
			return FieldErr(FieldArgs, "must not contain NUL bytes")
		}
	}
	for _, kv := range p.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
			return FieldErr(FieldEnv, "entry %q is not NAME=value", kv)
		}
	}
	if p.Cwd != "" && !strings.HasPrefix(p.Cwd, "/") {
		return FieldErr(FieldCwd, "must be an absolute path in the sandbox, got %q", p.Cwd)
	}
	if len(p.Tag) > maxTagLen || strings.ContainsAny(p.Tag, "\x00\n") {
		return FieldErr(FieldTag, "must be one line of at most %d bytes", maxTagLen)
	}
	if p.PTY != nil && (p.PTY.Cols == 0 || p.PTY.Rows == 0 || p.PTY.Cols > 1000 || p.PTY.Rows > 1000) {
		return FieldErr(FieldPTY, "size must be 1-1000 columns and rows, got %dx%d", p.PTY.Cols, p.PTY.Rows)
	}
	return nil
}

// ParseSignal reads a signal by name (TERM, SIGTERM, kill) or number.
func ParseSignal(s string) (syscall.Signal, error) {
	name := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "SIG"))
	if n, ok := signalNames[name]; ok {
		return n, nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err == nil && fmt.Sprint(n) == s && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	return 0, FieldErr(FieldSignal, "%q is not a signal: use a name such as TERM, KILL, INT, HUP or a number", s)
}

var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "TERM": syscall.SIGTERM, "CONT": syscall.SIGCONT,
	"STOP": syscall.SIGSTOP, "TSTP": syscall.SIGTSTP, "WINCH": syscall.SIGWINCH, "ALRM": syscall.SIGALRM,
	"PIPE": syscall.SIGPIPE,
}
