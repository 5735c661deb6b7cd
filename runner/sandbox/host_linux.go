package sandbox

import (
	"crypto/rand"
	"encoding/hex"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/secrets"
)

// Host is what the sandbox's life needs of the host: the containerd it
// runs on and boxer's directories, runtimes and setups there. A Runner is
// a Host with the layers above the sandbox.
type Host struct {
	// Containerd is the client, at Address, in Namespace.
	Containerd *containerd.Client
	// Address is containerd's socket.
	Address string
	// Namespace keeps boxer's objects apart in containerd.
	Namespace string
	// StateDir is boxer's state directory, RunsDir the sandboxes' run
	// directories under it.
	StateDir string
	RunsDir  string
	// Cgroups is the host's cgroup mode.
	Cgroups cgroups.Mode
	// Facts are what every sandbox's spec needs of the host.
	Facts HostFacts
	// Owner is this process, as the labels of its sandboxes name it.
	Owner string
	// Shim is the runtime for containerd: io.containerd.runc.v2, or the
	// path of boxer's wrapper around it (see reaper.ShimScript).
	Shim string
	// Wrap is boxer-wrap, the wrappers' interpreter; empty: they are
	// /bin/sh scripts (see wrap_linux.go).
	Wrap string
	// ShimContent is what the file shim holds when it is boxer's wrapper.
	ShimContent string
	// BundlesDir is containerd's task bundles, where known (boxer's
	// private daemon).
	BundlesDir string
	// Private says that containerd is boxer's own, which the next boxer
	// command starts again should it stop.
	Private bool
	// Userns is how runc sandboxes get user namespaces.
	Userns UsernsSetup
	// Egress is how sandboxes with egress get their way out.
	Egress EgressSetup
	// Secrets are the values requests may name; Inject the headers the
	// proxy sets from them (see the Options of package runner).
	Secrets *secrets.Store
	Inject  []secrets.Injection
	lease   containerLease
}

// NewID makes a sandbox's ID.
func NewID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "bx-" + hex.EncodeToString(b)
}
