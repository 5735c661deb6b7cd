package contract

// A session's ports, as its clients see them (session_port_linux.go).

import "fmt"

// FieldPort names the port of a session asked for.
const FieldPort = "port"

// PortError is a port of a session nothing could be reached on: nothing
// listens on it there (or what does refused the connection).
type PortError struct {
	ID   string
	Port int
	// Reason is what the runtime said.
	Reason string
}

func (e *PortError) Error() string {
	return fmt.Sprintf("nothing answers on port %d in session %s (%s): start a program that listens on it there, e.g. with 'boxer session exec --bg'", e.Port, e.ID, e.Reason)
}
