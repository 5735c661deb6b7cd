package contract

// Checkpoints of gVisor sessions, on every platform: errors and caps.

import (
	"errors"
	"fmt"
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
