package contract

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/boxer-dev/boxer/egress"

	"github.com/boxer-dev/boxer/snapshots"
)

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

// Result is the result object of docs/reference.md.
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
	FilesSkipped int `json:"files_skipped,omitempty"`
	// Files are the files return_files asked for; nil without it.
	Files []ReturnedFile `json:"files,omitempty"`
	// Network is what a run with egress did on the network: its
	// allowlist, connections, bytes and refused destinations.
	Network *egress.Report `json:"network,omitempty"`
	// Secrets names the secrets delivered in /run/secrets; Injected the
	// headers the proxy set from secrets the sandbox never saw. Never a
	// value.
	Secrets  []string         `json:"secrets,omitempty"`
	Injected []InjectedHeader `json:"injected,omitempty"`
	// Session is the session a call ran in; SessionEnded, why the session
	// ended with this call (the next call would find it gone).
	// MemoryPeakScope says whether memory_peak_bytes is the call's own
	// ("call") or the session's since it was made ("session"): see
	// docs/reference.md, "Sessions".
	Session         string `json:"session,omitempty"`
	SessionEnded    string `json:"session_ended,omitempty"`
	MemoryPeakScope string `json:"memory_peak_scope,omitempty"`
	Error           string `json:"error,omitempty"`
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

// ErrInvalid marks a request boxer refuses before running anything; every
// *FieldError is one.
var ErrInvalid = errors.New("invalid request")

// ErrImageNotFound is in the error when the image to run is not there.
var ErrImageNotFound = snapshots.ErrImageNotFound

// ErrInterrupted is returned when the caller's context ended the run.
var ErrInterrupted = errors.New("interrupted")

// ImageError says which image is missing and what to run to get it;
// errors.Is finds ErrImageNotFound in it.
type ImageError struct {
	Ref string
	// Lang is the preset whose default image is missing, if that is it.
	Lang string
}

func (e *ImageError) Error() string {
	if e.Lang != "" {
		return fmt.Sprintf("image %s not found: run 'boxer setup --lang %s'", e.Ref, e.Lang)
	}
	return fmt.Sprintf("image %s not found: build it with 'boxer image build' or see 'boxer image ls'", e.Ref)
}

// Unwrap makes an ImageError an ErrImageNotFound.
func (e *ImageError) Unwrap() error { return ErrImageNotFound }

// Field is the request field that chose the image.
func (e *ImageError) Field() string {
	if e.Lang != "" {
		return FieldLang
	}
	return FieldImage
}

// Health says whether containerd answers and which presets' images are there.
type Health struct {
	OK         bool            `json:"ok"`
	Containerd string          `json:"containerd"`
	Images     map[string]bool `json:"images"`
}
