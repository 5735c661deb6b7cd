package sandbox

// A sandbox's states, and the steps between them.

import "fmt"

// State is where a sandbox is in its life. Each step moves it on by one
// state; Destroy ends it from any state, and is the only way to remove it.
type State int

const (
	// StateNew: a value only, nothing on the host yet.
	StateNew State = iota
	// StatePrepared: its run directory, owner, code directory and
	// workspace are on the host.
	StatePrepared
	// StateCreated: container and task created (the runtime made the
	// namespaces, mounts and cgroup), limits verified, exit awaited.
	StateCreated
	// StateHeld: started with its program held by the gate until a
	// request comes (pre-created sandboxes).
	StateHeld
	// StateRunning: the program runs.
	StateRunning
	// StateExited: the program has ended and its figures are read.
	StateExited
	// StateDestroyed: nothing of it is left.
	StateDestroyed
)

func (s State) String() string {
	return [...]string{"new", "prepared", "created", "held", "running", "exited", "destroyed"}[s]
}

// stateError is a step taken in a state it cannot be taken from.
type stateError struct {
	id       string
	from, to State
}

func (e *stateError) Error() string {
	return fmt.Sprintf("sandbox %s: cannot go from %s to %s", e.id, e.from, e.to)
}
