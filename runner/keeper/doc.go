// Package keeper owns the host's ends of a live session: its keeper
// (keeper*.go), the detached `boxer keeper ID` process that holds the
// session's processes and the last of their output (ring.go), serves its
// network's gateway and holds its secrets; the keeper's client, which
// starts it, hands it the gateway's sockets and the secrets, and asks it
// to start, list, signal, feed and follow processes
// (session_proc_linux.go, session_net_linux.go, session_secrets_linux.go);
// and the wire to the session's interpreter (session_wire_linux.go).
// Its Layer is a sandbox Host with the command that starts keepers; the
// sessions' Layer (package session) embeds it.
//
// It builds on package sandbox and the contract, and must never import
// package session, warm or runner: what it asks of the sessions above it
// (whether an ID is a session's, a live session's run directory, room for
// a caller's process, a session's end at its deadline) it asks through
// Sessions, an interface of its own. docs/internals.md ("Packages of
// runner") draws the layers.
package keeper
