package contract

// A session's life, on every platform: paused, its time left, its figures.

import (
	"errors"
	"fmt"
	"time"
)

// ErrSessionPaused is returned for a call, a file or a process of a
// session that is paused: its sandbox is frozen, and what would run in it
// would wait for the resume.
var ErrSessionPaused = errors.New("the session is paused")

// SessionPausedError is a session that is paused, by ID.
type SessionPausedError struct{ ID string }

func (e *SessionPausedError) Error() string {
	return fmt.Sprintf("session %s is paused: resume it first ('boxer session resume %s', or POST /v1/sessions/%s/resume)", e.ID, e.ID, e.ID)
}

// Is makes a SessionPausedError an ErrSessionPaused.
func (e *SessionPausedError) Is(target error) bool { return target == ErrSessionPaused }

// SessionStats are a live session's figures, read when asked: those of
// its sandbox as a whole (every call and every process it ran), not of
// one call.
type SessionStats struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	Paused bool      `json:"paused"`
	// Checkpointed: saved to disk, its sandbox ended (no CPU or memory).
	Checkpointed bool `json:"checkpointed"`
	// CPUTimeMs is the CPU time its cgroup used since it was made, user
	// and system.
	CPUTimeMs float64 `json:"cpu_time_ms"`
	// MemoryBytes is its cgroup's memory use now (page cache included, as
	// the kernel counts it against the limit), MemoryPeakBytes the highest
	// since it was made, MemoryLimitBytes the limit.
	MemoryBytes      uint64 `json:"memory_bytes"`
	MemoryPeakBytes  uint64 `json:"memory_peak_bytes"`
	MemoryLimitBytes int64  `json:"memory_limit_bytes"`
	// DiskUsedBytes is what its /workspace holds, of DiskLimitBytes.
	DiskUsedBytes  uint64 `json:"disk_used_bytes"`
	DiskLimitBytes uint64 `json:"disk_limit_bytes"`
	// Network is nil for a session without a network (made without
	// allow_hosts): there is nothing to count.
	Network *NetworkStats `json:"network"`
}

// NetworkStats count what a session's network carried.
type NetworkStats struct {
	SentBytes     uint64 `json:"sent_bytes"`
	ReceivedBytes uint64 `json:"received_bytes"`
}
