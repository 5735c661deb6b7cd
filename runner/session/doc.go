// Package session owns sessions: sandboxes that live across calls. It
// makes them (session_make_linux.go) and keeps their keepers, the host
// processes that hold their processes (keeper*.go); it carries their
// calls over the wire to their interpreters (session_wire_linux.go,
// session_call_linux.go), their files, processes, ports, networks,
// secrets, snapshots and forks, their ends, the ready sessions a server
// makes ahead, and what each caller holds on the host (tenant_linux.go).
// Its Layer is a sandbox Host with the sessions on it; its sandbox is a
// sandbox.Sandbox with a session's Parts, and its teardown releases what
// sessions made of it (the link its keeper served, its checkpoint), then
// Destroys it.
//
// It builds on package sandbox and the contract, and must never import
// package runner or warm (ready sessions yield to runs through Settler,
// an interface of its own); docs/internals.md ("Packages of runner")
// draws the layers.
package session
