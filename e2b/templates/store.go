// Package templates owns E2B's template builds (Template.build in the
// SDKs) on a boxer server: a template is a key's own image, built by the
// server's image builder from the steps the SDK sends, under an alias
// only that key sees and uses. It keeps the templates and their builds'
// states and logs, checks the steps and plans the build, takes the copy
// steps' uploads within each key's bound and unpacks them beneath the
// build's context, and runs one build at a time.
//
// It speaks no HTTP: package e2b's handlers decode E2B's calls, ask the
// Store, and answer what it returns (an *Error carries its status). It
// must never import package e2b, server or cmd.
package templates

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
	"github.com/boxer-dev/boxer/internal/quote"
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
	StatusWaiting  = "waiting"
	StatusBuilding = "building"
	StatusReady    = "ready"
	StatusError    = "error"
)

// aliasForm is a template's alias: what E2B's names are, without a tag,
// and never a reference to an image (no '/' or ':').
var aliasForm = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Config is what a Store builds with.
type Config struct {
	// Build builds the images.
	Build Builder
	// AllowHosts is what a template's steps may reach.
	AllowHosts []string
	// Dir holds the builds' uploads and contexts while they build; ""
	// is a directory made under the system's temporary one.
	Dir string
	// MaxUpload bounds what one key's uploads take at once; 0:
	// DefaultMaxUpload.
	MaxUpload int64
	// MaxCPUs and MaxMemoryBytes cap a build's steps (0: no cap); a
	// template that asks for none, or more, gets the cap.
	MaxCPUs        float64
	MaxMemoryBytes int64
	// Reserved says whether a name is one of the server's own
	// templates, which no key's may take.
	Reserved func(name string) bool
	// Preset is the image of one of the server's own templates.
	Preset func(name string) (image string, ok bool)
	// Remove removes a template's image when it is deleted (ErrImageInUse
	// while a sandbox runs in it); nil: images are left.
	Remove func(ctx context.Context, image string) error
	// Warn gets what goes wrong beside a call (the templates not kept
	// for the next server); nil: nothing is told.
	Warn func(error)
}

// Error is a refusal with the HTTP status E2B's API answers it with.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(code int, format string, args ...any) *Error {
	return &Error{code, fmt.Sprintf(format, args...)}
}

// Template is a key's template as it is now, with its latest build's
// ID and status.
type Template struct {
	ID, Alias, Owner string
	// Image is the image its last good build made ("" before one).
	Image string
	// StartCmd and ReadyCmd run when a sandbox of it starts; Workdir is
	// where StartCmd runs.
	StartCmd, ReadyCmd, Workdir string
	CPUs                        float64
	MemoryMB                    int64
	Created, Updated            time.Time
	BuildID, BuildStatus        string
	// Tags are those of its latest build (asked for, while it builds).
	Tags []string `json:"-"`
}

// template is a key's template in the store.
type template struct {
	Template
	// build is its latest build.
	build *build
	// uploads are its copy steps' files, by files hash: the paths of
	// the archives uploaded, removed when its build ends.
	uploads map[string]string
	// tags name its good builds, by tag; images are the images of the
	// builds kept (those a tag names, its newest good one, and those a
	// sandbox still ran in when they were let go), by build ID.
	tags   map[string]Tag
	images map[string]string
}

// newTemplate is a template with its maps made.
func newTemplate(v Template) *template {
	return &template{Template: v, uploads: map[string]string{}, tags: map[string]Tag{}, images: map[string]string{}}
}

// view is t as it is now, under the store's lock.
func (t *template) view() Template {
	v := t.Template
	if t.build != nil {
		v.BuildID, v.BuildStatus, v.Tags = t.build.ID, t.build.status, t.build.tags
	}
	return v
}

// build is one build of a template.
type build struct {
	ID     string
	status string
	logs   []LogEntry
	// reason says why it failed: its message and step ("base", or the
	// step's number from 1).
	reason, step string
	// tags are what it is to be tagged once good.
	tags []string
}

// LogEntry is E2B's BuildLogEntry.
type LogEntry struct {
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

// Store keeps the templates, by ID, with their uploads.
type Store struct {
	cfg  Config
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

// New is a store with the templates a former server kept in cfg.Dir, if
// any (none when Dir is "").
func New(cfg Config) (*Store, error) {
	ts := &Store{
		cfg: cfg, dir: cfg.Dir, slot: make(chan struct{}, 1),
		byID: map[string]*template{}, tokens: map[string]upload{}, used: map[string]int64{},
	}
	if err := ts.load(); err != nil {
		return nil, err
	}
	return ts, nil
}

// Enabled says whether the store builds (a server without a builder
// answers 501).
func (ts *Store) Enabled() bool { return ts.cfg.Build != nil }

// MaxUpload is what one key's uploads may take at once.
func (ts *Store) MaxUpload() int64 {
	if ts.cfg.MaxUpload > 0 {
		return ts.cfg.MaxUpload
	}
	return DefaultMaxUpload
}

// owned finds caller's template by ID or alias; another key's is not
// found, as one that never was.
func (ts *Store) owned(caller, idOrAlias string) (*template, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.ownedLocked(caller, idOrAlias)
}

// ownedOrError is owned, or a 404 naming the template.
func (ts *Store) ownedOrError(caller, id string) (*template, error) {
	t, ok := ts.owned(caller, id)
	if !ok {
		return nil, errorf(404, "template %q not found", quote.Cut(id))
	}
	return t, nil
}

// View is caller's template by ID or alias, with a tag or not
// ('name:tag'), as it is now: its Image and BuildID are the build the
// tag names (see resolveLocked).
func (ts *Store) View(caller, ref string) (Template, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.resolveLocked(caller, ref)
}

// ownedLocked is owned with the store's lock held.
func (ts *Store) ownedLocked(caller, idOrAlias string) (*template, bool) {
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

// List is caller's templates.
func (ts *Store) List(caller string) []Template {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []Template
	for _, t := range ts.byID {
		if t.Owner == caller {
			out = append(out, t.view())
		}
	}
	return out
}

// workDir is the store's directory, made on first use.
func (ts *Store) workDir() (string, error) {
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
func newID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// log adds a line to b's log; the store's lock is held.
func (b *build) log(level, step, format string, args ...any) {
	if len(b.logs) >= maxLogEntries {
		return
	}
	b.logs = append(b.logs, LogEntry{Time: time.Now(), Level: level, Message: fmt.Sprintf(format, args...), Step: step})
}

// logf adds a line to t's current build under the store's lock.
func (ts *Store) logf(t *template, level, step, format string, args ...any) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.build.log(level, step, format, args...)
}

// progress is the builder's progress as log lines: each "[n/total] ..."
// line it writes, with the step it is on, so that a failure names it.
type progress struct {
	ts   *Store
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
