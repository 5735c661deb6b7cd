// Package runner runs one program in a fresh, hardened sandbox on containerd
// and reports how it ended and what it cost. Run is the only entry point the
// CLI and the server use; docs/reference.md describes the contract.
//
// runner owns the one-shot runs, the sandbox's life, sessions, warm
// sandboxes and the Runner that composes them; the request, result and the
// other pure types are package contract's (re-exported here, contract.go),
// the Host a sandbox runs on and what it is made of package sandbox's. It
// must never import the protocol packages above it (server, e2b, cmd);
// docs/internals.md ("Packages of runner") draws the layers.
package runner
