// Package reaper removes what boxer processes that died left behind: their
// sandboxes (containers with a dead owner), their run directories, and what
// containerd lost of a sandbox whose creation their death cut short.
//
// Only the commands that create sandboxes (run, serve, mcp) start a reaper;
// a client that only lists images or checks the host never waits for one.
// It also owns the names by which a leftover is found: the container
// labels, the run directory's owner file and the sandbox's cgroup path.
package reaper

import "time"

// Labels on every sandbox container.
const (
	// LabelSandbox marks a container as a boxer sandbox.
	LabelSandbox = "boxer.sandbox"
	// LabelOwner names the boxer process that made it: "pid:starttime".
	LabelOwner = "boxer.owner"
	// LabelAnchor marks a sandbox whose shim other sandboxes share (a
	// server's): a record of its ID in containerd's sandbox store, with
	// the same labels, goes with it.
	LabelAnchor = "boxer.anchor"
	// LabelStandby marks a CLI's standby sandbox, made ahead of the next
	// run of its shape: its value is the shape's key, and empty once a run
	// has claimed it. Its owner is the process that waits to remove it
	// when it expires.
	LabelStandby = "boxer.standby"
	// LabelStandbyUntil is when a standby expires (Unix seconds).
	LabelStandbyUntil = "boxer.standby-until"
)

// Leases a standby's claim and making hold for a moment: containerd
// creates a lease of a given ID once, which makes them locks that only
// one boxer process wins. One left by a process that died is removed by
// the reaper once it is older than LockStale.
const (
	ClaimLeasePrefix   = "boxer-claim-"
	StandbyLeasePrefix = "boxer-standby-"
	// ContainerLeasePrefix names the lease a long-lived boxer makes its
	// containers under (runner's containerLease): held while it lives.
	ContainerLeasePrefix = "boxer-containers-"
	LockStale            = time.Minute
)

// CleanupTimeout bounds one teardown, and one pass of the reaper: cleanup
// never uses a caller's (possibly cancelled) context, but a fresh, bounded
// one.
const CleanupTimeout = 15 * time.Second

// CgroupsPath is the cgroup of sandbox id in a containerd namespace, as the
// spec sets it and as the reaper looks for it.
func CgroupsPath(namespace, id string) string {
	return "/boxer/" + namespace + "/" + id
}
