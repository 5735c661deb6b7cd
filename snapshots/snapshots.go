// Package snapshots builds, stores and lists boxer's images in containerd and
// turns an image into the read-only root filesystem of a sandbox.
//
// Building and unpacking need Linux (debootstrap, overlayfs, mounts), and so
// does every function that talks to containerd: elsewhere they return an
// error saying so. The types and the name helpers build everywhere.
package snapshots

import (
	"errors"
	"strings"

	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Snapshotter is the containerd snapshotter boxer unpacks images with.
const Snapshotter = "overlayfs"

// Labels boxer puts on containerd objects.
const (
	// LabelBuildKey holds the hash of an image's build inputs.
	LabelBuildKey = "boxer.build-key"
	// LabelConfig holds the image config a run needs, on the shared view.
	LabelConfig = "boxer.image-config"
	// LabelView names, on a sandbox's container, the shared view its root
	// was mounted from, when boxer mounted that root itself (an idmapped
	// one): such a container has no snapshot key, so that containerd and
	// its shim neither look the view up nor mount it for each task.
	LabelView = "boxer.view"
	// gcRoot keeps an object from containerd's garbage collector.
	gcRoot = "containerd.io/gc.root"
)

// ErrImageNotFound is returned when a reference names no image in containerd.
var ErrImageNotFound = errors.New("image not found")

// ErrImageInUse is what Remove answers for the last name of an image a
// running sandbox's root is.
var ErrImageInUse = errors.New("image in use by a running sandbox")

// inUseError is an ErrImageInUse saying which and how many.
type inUseError struct{ msg string }

func (e *inUseError) Error() string        { return e.msg }
func (e *inUseError) Is(target error) bool { return target == ErrImageInUse }

// Normalize turns a short build name into the image reference boxer stores:
// "python" becomes "boxer/python"; a name with a slash stays as it is.
func Normalize(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "boxer/" + name
}

// NormalizeRef turns a docker-style short reference into the full one
// containerd stores ("python:3" is docker.io/library/python:3); a reference
// it cannot parse is returned as it is.
func NormalizeRef(ref string) string {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return ref
	}
	return named.String()
}

// Rootfs is what a run needs of an image: the shared read-only view of its
// unpacked layers and the parts of its config that shape the process.
type Rootfs struct {
	Image       string
	Snapshotter string
	// Key names one read-only view per image, shared by every run: the root
	// is mounted read-only, so no run needs a snapshot of its own.
	Key    string
	Config ocispec.ImageConfig
}
