package keeper

// The keepers' layer over a Host, and what it asks of the sessions above it.

import (
	"context"

	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
)

// Layer starts and speaks to a Host's sessions' keepers, and is what a
// keeper serves its session with (Keep).
type Layer struct {
	*box.Host
	// keeper is the command that starts a session's keeper
	// (Options.Keeper of package runner).
	keeper []string
	// sessions is the sessions' layer above.
	sessions Sessions
}

// Sessions is what the keepers ask of the sessions above them (package
// session's Layer answers): the keeper never imports it.
type Sessions interface {
	// ValidID says whether id is a session's ID (and so names no other
	// container or path).
	ValidID(id string) bool
	// RunDir returns the run directory of live session id of caller (""
	// for any), or why there is none.
	RunDir(ctx context.Context, id, caller string) (string, error)
	// HoldProcess counts a process of caller's against its ceiling
	// until release; background says it runs beside the calls.
	HoldProcess(ctx context.Context, caller string, background bool) (release func(), err error)
	// Expire ends session c if it is over and says why ("" if it lives),
	// and whether this call ended it.
	Expire(ctx context.Context, c containerd.Container, info containers.Container, ask bool) (reason string, ended bool)
}

// New returns the keepers' layer over h: keeper is the command that
// starts one (none: this boxer cannot), sessions the layer above.
func New(h *box.Host, keeper []string, sessions Sessions) *Layer {
	return &Layer{Host: h, keeper: keeper, sessions: sessions}
}
