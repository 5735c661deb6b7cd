// Package runner runs one program in a fresh, hardened sandbox on containerd
// and reports how it ended and what it cost. Run is the only entry point the
// CLI and the server use; docs/reference.md describes the contract.
//
// runner owns the one-shot runs and the Runner that composes the layers
// below it: the request, result and the other pure types are package
// contract's (re-exported here, contract.go), the Host a sandbox runs on
// and the sandbox's life, from its making to its Destroy, package
// sandbox's, the pool, standbys and shared shims package warm's (the
// Runner forwards to them, warm_linux.go), sessions package session's
// (the Runner embeds its Layer); a leftover found on containerd goes down
// the layer its labels name (teardown_linux.go). It must never import
// the protocol packages above it (server, e2b, cmd); docs/internals.md
// ("Packages of runner") draws the layers.
package runner
