package contract

// Checkpoints of gVisor sessions, on every platform: errors and caps.

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotCheckpointable is returned for a session that cannot be
// checkpointed or forked.
var ErrNotCheckpointable = errors.New("the session cannot be checkpointed")

// CheckpointError says why session ID cannot be checkpointed.
type CheckpointError struct{ ID, Why string }

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("session %s cannot be checkpointed: %s", e.ID, e.Why)
}

// Is makes a CheckpointError an ErrNotCheckpointable.
func (e *CheckpointError) Is(target error) bool { return target == ErrNotCheckpointable }

// MaxForks caps the sessions one fork makes.
const MaxForks = 8

// ErrSnapshotNotFound is returned for a kept snapshot that is not, or
// is another caller's.
var ErrSnapshotNotFound = errors.New("snapshot not found")

// Kept is a snapshot kept of a session (SaveSnapshot): its name, its
// caller's, when it was made, the disk it holds, and what the caller
// keeps beside it (Meta, opaque to the runner).
type Kept struct {
	Name   string
	Caller string
	Made   time.Time
	Bytes  int64
	Meta   []byte
}
