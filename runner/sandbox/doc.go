// Package sandbox owns what one sandbox is made of on the host: its OCI
// spec and directories (spec.go), the files copied into and out of its
// workspace and opened from the host without waiting on what it planted
// (workspace_linux.go, open_linux.go), and boxer-wrap, the runtime wrapper
// (wrap_linux.go). It knows nothing of sessions, warm pools or runs: it
// must never import package runner or any package of runner but contract.
// The sandbox's life (make, start, wait, destroy) still lives in runner;
// docs/internals.md ("Packages") says how it moves here.
package sandbox
