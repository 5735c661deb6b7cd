// Package runner runs one program in a fresh, hardened sandbox on containerd
// and reports how it ended and what it cost. Run is the only entry point the
// CLI and the server use; docs/reference.md describes the contract.
//
// runner owns the one-shot runs, sessions, warm sandboxes and the Runner
// that composes them; the request, result and the other pure types are
// package contract's (re-exported here, contract.go), the Host a sandbox
// runs on and the sandbox's life, from its making to its Destroy, package
// sandbox's (sandbox_parts_linux.go says what the layers here add to a
// sandbox, and tears one down down the layers once). It must never import
// the protocol packages above it (server, e2b, cmd); docs/internals.md
// ("Packages of runner") draws the layers.
package runner
