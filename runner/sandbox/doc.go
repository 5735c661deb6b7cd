// Package sandbox owns the bottom of a sandbox's life: the Host it runs
// on (the containerd client, boxer's directories, the container lease,
// the runtimes and their wrappers, user namespaces, the images' idmapped
// views, the egress and secrets setups, containerd's faults:
// host_linux.go and the files beside it), what one sandbox is made of
// (its OCI spec and directories, spec.go; the files copied into and out
// of its workspace and opened from the host without waiting on what it
// planted, workspace_linux.go, open_linux.go; boxer-wrap, wrap_linux.go)
// and the Sandbox itself, from its run directory to its removal: make,
// deliver, start, wait and Destroy (sandbox_linux.go, destroy_linux.go),
// its user namespace, link, secrets and preload hook.
//
// It knows nothing of sessions, warm pools, shared shims or runs: what a
// layer above adds to a sandbox it makes comes in through the Parts it
// gives (its labels and first process, its streams), SessionParts
// besides for a session's (its files, network namespace, CA lifetime and
// restore), WarmParts for a warm sandbox's (detached streams, a shared
// shim), and Destroy never calls them: the layer that made a sandbox
// undoes its own parts around Destroy. It must never import package
// runner or any package of runner but contract.
package sandbox
