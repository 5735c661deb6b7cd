// Package runner runs one program in a fresh, hardened sandbox on containerd
// and reports how it ended and what it cost. Run is the only entry point the
// CLI and the server use.
package runner

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/boxer-dev/boxer/snapshots"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Defaults from SPEC.md.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMemory      = 256 << 20
	DefaultCPUs        = 1.0
	DefaultPids        = 64
	DefaultTmpSize     = 64 << 20
	DefaultOutputLimit = 1 << 20
	DefaultUID         = 65534
	DefaultGID         = 65534
	DefaultRuntime     = "runc"
	DefaultNetwork     = "none"
)

// Request says what to run and within which limits. Zero limits take the
// defaults above.
type Request struct {
	// Lang names a preset (see Presets); Code is its program. Without Lang,
	// Args is run in Image.
	Lang  string
	Code  []byte
	Image string
	Args  []string
	// Env holds K=V pairs set on top of the image's environment.
	Env []string

	Timeout     time.Duration
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	TmpBytes    int64
	OutputLimit int64
	UID, GID    uint32
	// UserSet tells that UID and GID were given (0:0 is a valid choice).
	UserSet bool
	Runtime string
	Network string
	// Seccomp replaces the default profile; nil keeps it.
	Seccomp *specs.LinuxSeccomp

	// Stdin feeds the program's standard input; nil means empty (EOF at once).
	Stdin io.Reader `json:"-"`
	// CopyIn is a host directory copied into /workspace before the run.
	CopyIn string
	// Files are written into /workspace before the run (path relative to
	// /workspace to content), as the server's "files" field asks.
	Files map[string][]byte `json:"-"`
	// CopyOut is a host directory /workspace is copied to after the run
	// (also after a timeout or an OOM kill).
	CopyOut string

	// Stdout and Stderr, if set, receive the program's output as it comes,
	// capped by OutputLimit like the copies kept in the Result.
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
}

// Status values of a Result.
const (
	StatusExited  = "exited"
	StatusTimeout = "timeout"
	StatusOOM     = "oom"
	StatusKilled  = "killed"
	StatusError   = "error"
)

// Exit codes beyond the program's own, as docker uses them.
const (
	ExitBoxer      = 125
	ExitCannotExec = 126
	ExitNotFound   = 127
	ExitTimeout    = 124
	ExitOOM        = 137
)

// File is one file copied out of /workspace.
type File struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Result is the JSON object of SPEC.md.
type Result struct {
	ID              string  `json:"id"`
	Status          string  `json:"status"`
	ExitCode        int     `json:"exit_code"`
	Signal          string  `json:"signal,omitempty"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	DurationMs      float64 `json:"duration_ms"`
	MemoryPeakBytes uint64  `json:"memory_peak_bytes"`
	CPUTimeMs       float64 `json:"cpu_time_ms"`
	Runtime         string  `json:"runtime"`
	Image           string  `json:"image"`
	// FilesOut lists what --copy-out copied, relative to /workspace; nil
	// without --copy-out, empty when nothing was copied.
	FilesOut []File `json:"files_out,omitempty"`
	// FilesSkipped counts what --copy-out left behind: symlinks, special
	// files, files over the size budget.
	FilesSkipped int    `json:"files_skipped,omitempty"`
	Error        string `json:"error,omitempty"`
}

// MarshalJSON writes files_out as [] rather than leaving it out when
// --copy-out copied nothing.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	if r.FilesOut != nil && len(r.FilesOut) == 0 {
		return json.Marshal(struct {
			plain
			FilesOut []File `json:"files_out"`
		}{plain(r), r.FilesOut})
	}
	return json.Marshal(plain(r))
}

// ErrInvalid marks a request boxer refuses before touching containerd.
var ErrInvalid = errors.New("invalid request")

// ErrImageNotFound is in the error when the image to run is not there.
var ErrImageNotFound = snapshots.ErrImageNotFound

// ErrInterrupted is returned when the caller's context ended the run.
var ErrInterrupted = errors.New("interrupted")
