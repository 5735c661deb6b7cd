package runner

import (
	"io"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/secrets"
)

// Options say how a Runner reaches containerd.
type Options struct {
	// Address of containerd; empty means the embedded default (see daemon).
	Address string
	// Namespace keeps boxer's objects apart; default "boxer".
	Namespace string
	// Daemon locates boxer's state and the private containerd.
	Daemon daemon.Config
	// Progress hears about slow steps (starting containerd); may be nil.
	Progress io.Writer
	// Reap starts a pass over the sandboxes of boxer processes that died
	// (see the reaper package); Close waits for it. Commands that make
	// sandboxes set it; a client that only manages images does not.
	Reap bool
	// Egress is the operator's setting of the way out of sandboxes that
	// have network egress.
	Egress EgressOptions
	// Userns is the operator's setting of runc sandboxes' user namespaces.
	Userns box.UsernsOptions
	// Secrets are the values requests may name (Request.Secrets); nil
	// holds none.
	Secrets *secrets.Store
	// Inject are the headers the proxy of a run with egress sets on HTTPS
	// requests to their hosts, from secrets the sandbox never sees. A rule
	// applies to a request that names every secret of its template.
	Inject []secrets.Injection
	// SharedShims is the number of containerd shims that runc sandboxes
	// share, in turn, instead of starting one each (on containerd 2.x;
	// elsewhere, or 0, a shim each). For a long-lived Runner (a server):
	// each shared shim is held by a sandbox of its own while the Runner
	// lives. Sessions and gVisor sandboxes always have shims of their own.
	SharedShims int
	// ShimRuns is how many sandboxes a shared shim serves before a new one
	// replaces it; 0 is DefaultShimRuns.
	ShimRuns int
	// Standby: a run takes a standby of its shape when there is one (see
	// MakeStandby), as the CLI's runs do.
	Standby bool
	// HandOff: a run that could leave a standby does not remove its own
	// sandbox; TakeHandedOff gives it to the process that makes the
	// standby, which removes it first (see Runner.TakeHandedOff).
	HandOff bool
	// Keeper is the command that starts a session's keeper, the host
	// process that holds its processes (see Runner.Keep): the boxer binary
	// and its global flags, to which "keeper ID" is added.
	Keeper []string
	// SessionID, if set, makes the IDs of new sessions: "bxs-" (or the
	// prefix it is given) and 16 hex digits, optionally followed by a dash
	// and 20 more (a fleet's ID, naming its node; see the fleet package).
	SessionID func(prefix string) string
	// Ceilings cap what one caller holds on the host at once (watches,
	// streams, processes) and the watches of all callers.
	Ceilings contract.Ceilings
}

// EgressOptions are the operator's settings of network egress
// (sandbox.EgressOptions).
type EgressOptions = box.EgressOptions

// DefaultShimRuns is how many sandboxes a shared shim serves before a new
// one takes its place.
const DefaultShimRuns = 1000

// UsernsOptions are the operator's settings of runc sandboxes' user
// namespaces (sandbox.UsernsOptions).
type UsernsOptions = box.UsernsOptions
