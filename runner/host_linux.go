package runner

import (
	"crypto/rand"
	"encoding/hex"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/boxer-dev/boxer/cgroups"
	box "github.com/boxer-dev/boxer/runner/sandbox"
)

// Host is what the sandbox's life needs of the host: the containerd it
// runs on and boxer's directories, runtimes and setups there. A Runner is
// a Host with the layers above the sandbox.
type Host struct {
	client    *containerd.Client
	address   string
	namespace string
	stateDir  string
	runsDir   string
	cgroups   cgroups.Mode
	host      box.HostFacts
	owner     string
	// shim is the runtime for containerd: io.containerd.runc.v2, or the
	// path of boxer's wrapper around it (see reaper.ShimScript).
	shim string
	// wrap is boxer-wrap, the wrappers' interpreter; empty: they are
	// /bin/sh scripts (see wrap_linux.go).
	wrap string
	// shimContent is what the file shim holds when it is boxer's wrapper.
	shimContent string
	// bundlesDir is containerd's task bundles, where known (boxer's
	// private daemon).
	bundlesDir string
	// private says that containerd is boxer's own, which the next boxer
	// command starts again should it stop.
	private bool
	userns  usernsSetup
	lease   containerLease
}

// newID makes a sandbox's ID.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "bx-" + hex.EncodeToString(b)
}
