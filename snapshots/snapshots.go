// Package snapshots builds, stores and lists boxer's images in containerd and
// turns an image into the read-only root filesystem of a sandbox.
package snapshots

import (
	"errors"
	"strings"
)

// Snapshotter is the containerd snapshotter boxer unpacks images with.
const Snapshotter = "overlayfs"

// Labels boxer puts on containerd objects.
const (
	// LabelBuildKey holds the hash of an image's build inputs.
	LabelBuildKey = "boxer.build-key"
	// LabelConfig holds the image config a run needs, on the shared view.
	LabelConfig = "boxer.image-config"
	// gcRoot keeps an object from containerd's garbage collector.
	gcRoot = "containerd.io/gc.root"
)

// ErrImageNotFound is returned when a reference names no image in containerd.
var ErrImageNotFound = errors.New("image not found")

// Normalize turns a short build name into the image reference boxer stores:
// "python" becomes "boxer/python"; a name with a slash stays as it is.
func Normalize(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "boxer/" + name
}
