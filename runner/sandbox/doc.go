// Package sandbox owns the bottom of a sandbox's life: the Host it runs
// on (the containerd client, boxer's directories, the container lease,
// the runtimes and their wrappers, user namespaces, the images' idmapped
// views, containerd's faults: host_linux.go and the files beside it) and
// what one sandbox is made of (its OCI spec and directories, spec.go; the
// files copied into and out of its workspace and opened from the host
// without waiting on what it planted, workspace_linux.go, open_linux.go;
// boxer-wrap, wrap_linux.go). It knows nothing of sessions, warm pools or
// runs: it must never import package runner or any package of runner but
// contract. The sandbox's life itself (make, start, wait, destroy) is
// still runner's; docs/internals.md ("Packages of runner") says how it
// moves here.
package sandbox
