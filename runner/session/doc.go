// Package session owns sessions: sandboxes that live across calls. It
// makes them (session_make_linux.go) and finds them, carries their calls
// over the wire to their interpreters (session_call_linux.go,
// session_run_linux.go), their files' calls (done by package sessionfs),
// their ports, snapshots and forks, their ends, the ready sessions a
// server makes ahead, and what each caller holds on the host
// (tenant_linux.go). Its Layer embeds the keepers' (package keeper: a
// session's keeper, its client and the wire), over a sandbox Host; its
// sandbox is a sandbox.Sandbox with a session's Parts, and its teardown
// releases what sessions made of it (the link its keeper served, its
// checkpoint), then Destroys it.
//
// It builds on packages keeper, sessionfs and sandbox and the contract,
// and must never import package runner or warm (ready sessions yield to
// runs through Settler, an interface of its own); it answers what the
// keepers ask of it through keeper.Sessions. docs/internals.md
// ("Packages of runner") draws the layers.
package session
