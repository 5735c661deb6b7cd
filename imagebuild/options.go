package imagebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Labels boxer puts on a build's cache entries (image records).
const (
	// LabelStep holds the instruction a cache entry is the result of.
	LabelStep = "boxer.build-step"
	// LabelStepKey holds the entry's cache key.
	LabelStepKey = "boxer.build-step-key"
)

// CachePrefix starts the name of every cache entry: CachePrefix + key.
const CachePrefix = "boxer-build-cache/step:"

// keyFormat changes whenever what a step's layer holds changes for the
// same inputs, so that entries made the old way are not reused.
const keyFormat = "boxer-dockerfile-v1"

// Options are the inputs of a Dockerfile build.
type Options struct {
	// Name is the image built: stored as snapshots.Normalize(Name).
	Name string
	// Dockerfile is the parsed file; Context the directory COPY reads.
	Dockerfile *Dockerfile
	Context    string
	// BuildArgs are the --build-arg values, for the ARGs the file declares.
	BuildArgs map[string]string
	// Limits of each RUN step's sandbox; zero: the run's defaults.
	// DiskBytes bounds what one step writes to its layer.
	Timeout     time.Duration
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	TmpBytes    int64
	DiskBytes   int64
	// Runtime runs the RUN steps: runc (the default, when empty) or runsc.
	Runtime string
	// AllowHosts is the build's network allowlist; empty: no network.
	AllowHosts []string
	// PlainHTTP pulls a FROM image that is not stored over plain HTTP.
	PlainHTTP bool
	// NoCache reruns every step.
	NoCache bool
	// Progress receives a line per step; nil for silence.
	Progress io.Writer
}

// runtime is the steps' runtime: runc unless Runtime names another.
func (o Options) runtime() string {
	if o.Runtime == "" {
		return "runc"
	}
	return o.Runtime
}

// DefaultDiskBytes bounds what one step writes when DiskBytes is unset.
const DefaultDiskBytes = 4 << 30

// Result is what a build made.
type Result struct {
	Name   string
	Digest string
	// Steps and Cached count the steps after FROM, and those the cache
	// answered; Ran counts the sandboxes run.
	Steps, Cached, Ran int
}

// StepError is a RUN step that failed: its line, exit status and the
// tail of its output.
type StepError struct {
	File   string
	Line   int
	Text   string
	Status string
	Tail   string
}

// Error names the step and how it ended: FILE:LINE: TEXT: STATUS.
func (e *StepError) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Text, e.Status)
}

// stepKey is the cache key of a step: its parent's key, the instruction
// as it runs (variables expanded) and what else decides its layer (the
// files a COPY reads, a RUN's build arguments).
func stepKey(parent, instruction string, extra ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", keyFormat, parent, instruction)
	for _, e := range extra {
		fmt.Fprintf(h, "%d:%s\n", len(e), e)
	}
	return hex.EncodeToString(h.Sum(nil))[:48]
}

// sortedEnv is env's entries in order, one string.
func sortedEnv(env []string) string {
	s := append([]string(nil), env...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

// parseChown reads a numeric UID[:GID]; the group is the user's number
// when left out, as Docker's is for a numeric user.
func parseChown(s string) (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		g = u
	}
	uu, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("--chown %q: numeric UID[:GID] only", s)
	}
	gg, err := strconv.ParseUint(g, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("--chown %q: numeric UID[:GID] only", s)
	}
	return uint32(uu), uint32(gg), nil
}

// Entry is one build cache entry: the layer of one step.
type Entry struct {
	Name    string
	Step    string
	Created time.Time
}
