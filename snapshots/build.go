package snapshots

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
)

// buildFormat changes whenever the image layout below changes, so that
// cached images built the old way are rebuilt.
const buildFormat = "boxer-image-v3"

// User is the non-root user of every image boxer builds (nobody:nogroup).
const User = "65534:65534"

// BuildOptions are the inputs of an image build.
type BuildOptions struct {
	Name     string   // image name; stored as Normalize(Name)
	Packages []string // Debian packages on top of the minimal base
	Suite    string   // Debian suite, e.g. bookworm
	Mirror   string   // Debian mirror URL
	// CacheDir keeps built layers by input hash, so a fresh containerd gets
	// the image back without a new debootstrap.
	CacheDir string
	// Progress receives one line per slow step; nil for silence.
	Progress io.Writer
}

// Image describes an image in containerd.
type Image struct {
	Name     string
	Digest   digest.Digest
	Size     int64
	Created  time.Time
	BuildKey string
}

// Key is the hash of the inputs that decide an image's content.
func (o BuildOptions) Key() string {
	pkgs := slices.Clone(o.Packages)
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n", buildFormat, o.Suite, o.Mirror, strings.Join(pkgs, ","))
	return hex.EncodeToString(h.Sum(nil))[:32]
}
