package e2b

// E2B's template builds (Template.build in the SDKs): a template is a key's
// own image, built by the server's image builder from the steps the SDK
// sends, under an alias only that key sees and uses.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
)

// Builder builds an image from a template's steps: imagebuild.Build on the
// server's host.
type Builder func(ctx context.Context, o imagebuild.Options) (imagebuild.Result, error)

// DefaultMaxUpload bounds one key's template files when Config.MaxUpload
// is unset.
const DefaultMaxUpload = 256 << 20

// maxUnpacked bounds what one build's uploads hold once unpacked.
const maxUnpacked = 1 << 30

// maxLogEntries bounds a build's log.
const maxLogEntries = 10000

// E2B's build states.
const (
	buildWaiting  = "waiting"
	buildBuilding = "building"
	buildReady    = "ready"
	buildError    = "error"
)

// aliasForm is a template's alias: what E2B's names are, without a tag,
// and never a reference to an image (no '/' or ':').
var aliasForm = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// template is a key's template.
type template struct {
	ID, Alias, Owner string
	// Image is the image its last good build made ("" before one).
	Image string
	// StartCmd and ReadyCmd run when a sandbox of it starts; Workdir is
	// where StartCmd runs.
	StartCmd, ReadyCmd, Workdir string
	CPUs                        float64
	MemoryMB                    int64
	Created, Updated            time.Time
	// build is its latest build.
	build *build
	// uploads are its copy steps' files, by files hash: the paths of
	// the archives uploaded, removed when its build ends.
	uploads map[string]string
}

// build is one build of a template.
type build struct {
	ID     string
	status string
	logs   []logEntry
	// reason says why it failed: its message and step ("base", or the
	// step's number from 1).
	reason, step string
}

// logEntry is E2B's BuildLogEntry.
type logEntry struct {
	Time    time.Time
	Level   string
	Message string
	Step    string
}

// upload is a pending upload URL: the template and files hash it is for.
type upload struct {
	tmpl *template
	hash string
}

// templateStore keeps the templates, by ID, with their uploads.
type templateStore struct {
	mu   sync.Mutex
	byID map[string]*template
	// tokens are the upload URLs handed out, by their token.
	tokens map[string]upload
	// used is what each key's uploads take now, in bytes.
	used map[string]int64
	// dir holds the uploads and the builds' contexts.
	dir string
	// slot lets one build run at a time.
	slot chan struct{}
}

func (ts *templateStore) init() {
	if ts.byID == nil {
		ts.byID, ts.tokens, ts.used = map[string]*template{}, map[string]upload{}, map[string]int64{}
		ts.slot = make(chan struct{}, 1)
	}
}

// owned finds caller's template by ID or alias; another key's is not
// found, as one that never was.
func (ts *templateStore) owned(caller, idOrAlias string) (*template, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.ownedLocked(caller, idOrAlias)
}

// view is caller's template by ID or alias as it is now: a copy, read
// under the store's lock.
func (ts *templateStore) view(caller, idOrAlias string) (template, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, idOrAlias)
	if !ok {
		return template{}, false
	}
	c := *t
	c.build, c.uploads = nil, nil
	return c, true
}

// ownedLocked is owned with the store's lock held.
func (ts *templateStore) ownedLocked(caller, idOrAlias string) (*template, bool) {
	ts.init()
	if t, ok := ts.byID[idOrAlias]; ok && t.Owner == caller {
		return t, true
	}
	for _, t := range ts.byID {
		if t.Owner == caller && t.Alias == idOrAlias {
			return t, true
		}
	}
	return nil, false
}

// list is caller's templates.
func (ts *templateStore) list(caller string) []template {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []template
	for _, t := range ts.byID {
		if t.Owner == caller {
			c := *t
			c.build = &build{ID: t.build.ID, status: t.build.status}
			out = append(out, c)
		}
	}
	return out
}

// workDir is the store's directory, made on first use.
func (ts *templateStore) workDir() (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.dir == "" {
		d, err := os.MkdirTemp("", "boxer-e2b-templates-")
		if err != nil {
			return "", fmt.Errorf("making the template builds' directory: %w", err)
		}
		ts.dir = d
	}
	if err := os.MkdirAll(ts.dir, 0o700); err != nil {
		return "", fmt.Errorf("making the template builds' directory: %w", err)
	}
	return ts.dir, nil
}

// newID is a random identifier with a prefix.
func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// log adds a line to b's log; the store's lock is held.
func (b *build) log(level, step, format string, args ...any) {
	if len(b.logs) >= maxLogEntries {
		return
	}
	b.logs = append(b.logs, logEntry{Time: time.Now(), Level: level, Message: fmt.Sprintf(format, args...), Step: step})
}

// logf adds a line to t's current build under the store's lock.
func (ts *templateStore) logf(t *template, level, step, format string, args ...any) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.build.log(level, step, format, args...)
}

// progress is the builder's progress as log lines: each "[n/total] ..."
// line it writes, with the step it is on, so that a failure names it.
type progress struct {
	ts   *templateStore
	t    *template
	buf  []byte
	step int
}

var stepLine = regexp.MustCompile(`^boxer: \[(\d+)/\d+\] `)

func (p *progress) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		line := string(p.buf[:i])
		p.buf = p.buf[i+1:]
		if m := stepLine.FindStringSubmatch(line); m != nil {
			fmt.Sscan(m[1], &p.step)
		}
		p.ts.logf(p.t, "info", stepName(p.step), "%s", strings.TrimPrefix(line, "boxer: "))
	}
	return len(b), nil
}

// stepName is E2B's name of the builder's step n: "base" for the first
// (the base image), the template's step number (from 1) for the others.
func stepName(n int) string {
	if n <= 1 {
		return "base"
	}
	return fmt.Sprint(n - 1)
}
