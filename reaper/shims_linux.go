package reaper

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// containerd gives up on a shim that does not shut down in time once its
// last task is deleted (core/runtime/v2: "failed to shutdown shim task and
// the shim might be leaked"): the shim then serves nothing, for good. Seen
// under load, a session's shim outliving its session. A shim's container
// is made before the shim and removed after containerd is done with it, so
// a shim of boxer's whose container containerd no longer has is such a
// one (or one exiting at this moment): each pass sweeps them.

// reapLostShims sweeps the shims of this containerd's namespace serving
// boxer's sandboxes (bx...) that containerd has no container of.
func (cfg Config) reapLostShims(ctx context.Context) {
	var lost []string
	for _, id := range shimIDs(cfg.Address, cfg.Namespace) {
		if _, err := cfg.Client.LoadContainer(ctx, id); errdefs.IsNotFound(err) {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		log.G(ctx).Debugf("sandboxes %s: shims with no container, swept", strings.Join(lost, " "))
		cfg.sweep(ctx, lost)
	}
}

// shimIDs returns the sandbox IDs (bx...) that shim servers of containerd
// at address serve in namespace.
func shimIDs(address, namespace string) []string {
	entries, _ := os.ReadDir("/proc")
	var ids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(data, []byte("containerd-shim")) {
			continue
		}
		p := process{args: strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")}
		if id := flagValue(p.args, "-id"); strings.HasPrefix(id, "bx") && p.servesShim(address, namespace, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
