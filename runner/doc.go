// Package runner runs one program in a fresh, hardened sandbox on containerd
// and reports how it ended and what it cost. Run is the only entry point the
// CLI and the server use; docs/reference.md describes the contract.
//
// runner owns the one-shot runs and the Runner that composes the layers
// below it; the request, result and the other pure types are package
// contract's (re-exported here, contract.go). It must never import the
// protocol packages above it (server, e2b, mcp, cmd).
package runner
