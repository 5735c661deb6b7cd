package session

// The sessions' layer over a Host: what it holds across sessions.

import (
	"context"
	"sync"

	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
)

// Layer keeps a Host's sessions: making them, their calls, files,
// ports, snapshots and ends, and the ready sessions; the keepers' layer
// it embeds starts and speaks to their keepers.
type Layer struct {
	*keeper.Layer
	// cleanups are the background teardowns its Runner's Close waits for.
	cleanups *sync.WaitGroup
	// warm lets ready sessions yield to runs (Settler).
	warm Settler
	// checkpointsDir holds sessions' checkpoints, on disk
	// (session_snapshot_linux.go).
	checkpointsDir string
	// keptDir holds the snapshots kept of sessions (session_kept_linux.go).
	keptDir string
	ready   *readyPool
	// keeper starts a session's keeper (Options.Keeper); none: this
	// boxer cannot.
	keeper []string
	// sessionID makes new sessions' IDs (Options.SessionID).
	sessionID func(prefix string) string
	// ceilings and held: what each caller may hold and holds
	// (tenant_linux.go); watches caps all callers' watches.
	ceilings contract.Ceilings
	held     contract.Tally
	// counted are callers' running processes as last counted (tenant_linux.go).
	counted procCounts
	watches int
	// roomMu orders the checks of room for new sessions; making are the
	// sessions being made meanwhile, by ID, with their callers.
	roomMu sync.Mutex
	making map[string]string
	// ends keeps ended sessions' network figures (EndedNetwork).
	ends endedNets
	// server is boxer-procd on the host, every session's process server
	// but an interpreter's on gVisor (driverFirst); empty when it is not
	// installed: their processes are containerd execs.
	server string
}

// Settler is what ready sessions ask of the warm sandboxes beside them:
// to wait until no run is under way, so that a session being made does
// not slow a run on a small host (warm.Warm.Settle).
type Settler interface {
	Settle(ctx context.Context)
}

// Options are how a Layer makes and keeps sessions (the Options of
// package runner say what each is).
type Options struct {
	// CheckpointsDir holds sessions' checkpoints.
	CheckpointsDir string
	// KeptDir holds the snapshots kept of sessions (SaveSnapshot).
	KeptDir string
	// Keeper is the command that starts a session's keeper.
	Keeper []string
	// SessionID, if set, makes the IDs of new sessions.
	SessionID func(prefix string) string
	// Ceilings cap what one caller holds on the host at once.
	Ceilings contract.Ceilings
}

// New returns the sessions' layer over h; its ready sessions yield to
// warm's runs, and its background work joins cleanups.
func New(h *box.Host, cleanups *sync.WaitGroup, warm Settler, o Options) *Layer {
	r := &Layer{
		cleanups:       cleanups,
		warm:           warm,
		checkpointsDir: o.CheckpointsDir,
		keptDir:        o.KeptDir,
		keeper:         o.Keeper,
		sessionID:      o.SessionID,
		ceilings:       o.Ceilings,
		watches:        o.Ceilings.ServerWatches(inotifyInstances()),
		making:         map[string]string{},
		server:         box.HelperBinary(keeper.ServerName),
	}
	r.Layer = keeper.New(h, o.Keeper, keeperSessions{r})
	return r
}

// keeperSessions is what the keepers' layer asks of the sessions
// (keeper.Sessions).
type keeperSessions struct{ r *Layer }

func (s keeperSessions) ValidID(id string) bool { return validSessionID(id) }

func (s keeperSessions) RunDir(ctx context.Context, id, caller string) (string, error) {
	ls, err := s.r.loadSession(ctx, id, caller, false)
	if err != nil {
		return "", err
	}
	return ls.runDir, nil
}

func (s keeperSessions) HoldProcess(ctx context.Context, caller string, background bool) (func(), error) {
	return s.r.holdProcess(ctx, caller, background)
}

func (s keeperSessions) Expire(ctx context.Context, c containerd.Container, info containers.Container, ask bool) (string, bool) {
	return s.r.expire(ctx, c, info, ask)
}
