// Command containerd-shim-boxer-v2 is containerd's runc shim (io.containerd.runc.v2),
// built from containerd's own packages at the version boxer's go.mod pins, with the
// Go runtime settings of a shim that many sandboxes share.
//
// containerd's shim sets its garbage collector's target to 40 % (pkg/shim,
// setRuntime), for a node with one shim a pod, where its memory counts more
// than its CPU. boxer's server runs every sandbox in one of a few shared shims,
// and there the collector took 2.4 ms of CPU per sandbox, a fifth of the
// shim's whole share (docs/bench/2026-11-28.md). tuning sets it to 200 % once the
// shim serves, and GOMAXPROCS to at most the host's CPUs (the shim's manager
// asks for 4).
package main

import (
	"context"
	"runtime"
	"runtime/debug"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	"github.com/containerd/containerd/v2/pkg/shim"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"
)

const (
	// gcPercent is the collector's target (GOGC) for the serving shim.
	gcPercent = 200
	// maxProcs is the most Ps the serving shim runs, as containerd's
	// manager asks: never more than the host's CPUs.
	maxProcs = 4
)

// tuning is an internal plugin that applies the settings as the shim's
// server loads its plugins (after pkg/shim's own) and is then skipped.
var tuning = &plugin.Registration{
	Type: plugins.InternalPlugin,
	ID:   "boxer-tuning",
	InitFn: func(*plugin.InitContext) (any, error) {
		debug.SetGCPercent(gcPercent)
		runtime.GOMAXPROCS(min(maxProcs, runtime.NumCPU()))
		return nil, plugin.ErrSkipPlugin
	},
}

func init() { registry.Register(tuning) }

func main() {
	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))
}
