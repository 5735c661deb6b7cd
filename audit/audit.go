// Package audit is boxer serve's audit log: one JSON line per request and
// per sandbox life event, in one schema whichever interface (boxer's HTTP
// API, MCP, E2B's API) the event came through (docs/http.md, "The audit
// log"). A line names who asked and what happened, never the code, its
// input or output, a secret's value, a token or a key.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/egress"
)

// Events: what a line is about. A run's line is EventRun, a request
// refused before it reached a sandbox (authentication, its body)
// EventRequest; the others are a session's (an E2B sandbox is a session:
// its sandboxID is the session's ID).
const (
	EventRun          = "run"
	EventRequest      = "request"
	EventCreated      = "session_created"
	EventCall         = "session_run"
	EventFiles        = "session_files"
	EventProcess      = "session_process"
	EventNetwork      = "session_allow"
	EventNetworkRead  = "session_network"
	EventStats        = "session_stats"
	EventPort         = "session_port"
	EventPaused       = "session_paused"
	EventResumed      = "session_resumed"
	EventCheckpointed = "session_checkpointed"
	EventForked       = "session_forked"
	EventSnapshot     = "session_snapshot"
	EventSnapDeleted  = "snapshot_deleted"
	EventTimeout      = "session_timeout"
	EventEnded        = "session_ended"
	// EventForwarded is a request a fleet member sent to the member
	// holding its session (whose own line names the same caller).
	EventForwarded = "request_forwarded"
)

// Interfaces: what the caller spoke.
const (
	HTTP = "http"
	MCP  = "mcp"
	E2B  = "e2b"
)

// Server is the caller of what the server does on its own: a session it
// ends at its idle timeout, its lifetime or its shutdown.
const Server = "server"

// Entry is one line of the audit log. Which fields each event carries is
// documented in docs/http.md ("The audit log").
type Entry struct {
	Time time.Time `json:"time"`
	// Event says what the line is about (the Event constants).
	Event string `json:"event"`
	// Interface is what the caller spoke (HTTP, MCP, E2B); absent on a
	// line of the server's own (Caller Server).
	Interface string `json:"interface,omitempty"`
	// Session is the session's (or E2B sandbox's) ID; Reason why it
	// ended.
	Session string `json:"session,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// ID is a run's or a call's ID.
	ID string `json:"id,omitempty"`
	// Caller names who asked (see Caller), never by a token or a key.
	Caller     string            `json:"caller"`
	Lang       string            `json:"lang,omitempty"`
	Image      string            `json:"image,omitempty"`
	CodeSHA256 string            `json:"code_sha256,omitempty"`
	Limits     map[string]string `json:"limits,omitempty"`
	// AllowHosts and NetBytes are a session's allowlist and network byte
	// cap as they hold: at its creation, and after a change of its list.
	AllowHosts      []string `json:"allow_hosts,omitempty"`
	NetBytes        int64    `json:"net_bytes,omitempty"`
	HTTPStatus      int      `json:"http_status"`
	Status          string   `json:"status,omitempty"`
	ExitCode        *int     `json:"exit_code,omitempty"`
	Error           string   `json:"error,omitempty"`
	QueueMs         float64  `json:"queue_ms"`
	RunMs           float64  `json:"run_ms"`
	StdoutTruncated bool     `json:"stdout_truncated,omitempty"`
	StderrTruncated bool     `json:"stderr_truncated,omitempty"`
	// Network is what the network carried: a run's, a call's, or at a
	// session's end, the whole session's.
	Network *egress.Report `json:"network,omitempty"`
	// Member is the fleet member a forwarded request went to (its fleet
	// listener's address).
	Member string `json:"member,omitempty"`
	// Secrets names the secrets the request asked for; Injected the
	// headers the proxy set. Never a value.
	Secrets  []string   `json:"secrets,omitempty"`
	Injected []Injected `json:"injected,omitempty"`
}

// Injected is a header the egress proxy set: its host and name, never
// its value.
type Injected struct {
	Host   string `json:"host"`
	Header string `json:"header"`
}

// Log appends JSON Lines to a writer, safely from many goroutines. A nil
// Log, or one on a nil writer, writes nothing.
type Log struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a Log writing to w (nil for none).
func New(w io.Writer) *Log { return &Log{w: w} }

// Write appends e as one line, its Time set to now if it is zero.
func (l *Log) Write(e Entry) {
	if l == nil || l.w == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(line, '\n'))
}

// Caller names a caller as every line does: the address it came from
// (remoteAddr, host:port), and when it presented credentials (auth, the
// Authorization header it sent, or the bearer form of an API key), token:
// with 8 hex digits of their SHA-256: never the credentials.
func Caller(remoteAddr, auth string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	if auth != "" {
		sum := sha256.Sum256([]byte(auth))
		return host + " token:" + hex.EncodeToString(sum[:4])
	}
	return host
}
