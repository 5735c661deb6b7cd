// Package warm owns the sandboxes made before anyone asks for them and
// what they share: the server's pool of pre-created sandboxes
// (pool_linux.go), the CLI's standbys and their makers
// (standby_linux.go, standby_maker_linux.go), and the shared shims of
// runc sandboxes with the anchors that hold them (shims_linux.go,
// anchor_linux.go). Its Sandbox is a sandbox.Sandbox as this layer makes
// it (a run's, a pooled one, a standby, an anchor), with the Parts a
// warm sandbox adds, and its teardown: the sandbox's Destroy, then what
// warm made of it (an anchor's record, a member's place in a shared
// shim).
//
// It builds on package sandbox and the contract, and must never import
// package runner, sessions (runner/session) or any other package of
// runner above it; docs/internals.md ("Packages of runner") draws the
// layers.
package warm
