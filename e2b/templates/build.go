package templates

// A template's build: requested (its name checked, a new build of a key's
// template of that name), started (its steps planned, its uploads there)
// and run in the background, one at a time, its status and log read.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/internal/quote"
)

// Request is E2B's TemplateBuildRequestV3.
type Request struct {
	Name     string   `json:"name"`
	Alias    string   `json:"alias"`
	Tags     []string `json:"tags"`
	TeamID   string   `json:"teamID"`
	CPUCount *float64 `json:"cpuCount"`
	MemoryMB *int64   `json:"memoryMB"`
}

// Request makes caller's template of the request's name (or a new build of
// the one it has) and returns it, with its new build's ID.
func (ts *Store) Request(caller string, body Request) (Template, error) {
	name := body.Name
	if name == "" {
		name = body.Alias
	}
	alias, tag, hasTag := splitName(name)
	tags := slices.Clone(body.Tags)
	if hasTag {
		if err := checkTags("name", []string{tag}); err != nil {
			return Template{}, err
		}
		tags = append(tags, tag)
	}
	if err := checkTags("tags", tags); err != nil {
		return Template{}, err
	}
	if len(tags) == 0 {
		tags = []string{DefaultTag}
	}
	slices.Sort(tags)
	tags = slices.Compact(tags)
	name = alias
	switch {
	case body.TeamID != "":
		return Template{}, errorf(400, "teamID: boxer has no teams: a template is its key's")
	case !aliasForm.MatchString(alias):
		return Template{}, errorf(400, "name: %q: a template's name is lowercase letters, digits, '.', '_' and '-', at most 63, then ':' and a tag or not", quote.Cut(name))
	case ts.cfg.Reserved != nil && ts.cfg.Reserved(name):
		return Template{}, errorf(400, "name: %q is one of boxer's own templates", name)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, name)
	if ok && t.build != nil && (t.build.status == StatusBuilding || t.build.status == StatusWaiting && t.build.logs != nil) {
		return Template{}, errorf(409, "template %q is being built: wait for its build %s to end", name, t.build.ID)
	}
	if !ok {
		t = newTemplate(Template{ID: newID("tpl", 10), Alias: name, Owner: caller, Created: time.Now()})
	}
	if err := ts.roomLocked(caller, t, tags); err != nil {
		return Template{}, err
	}
	ts.byID[t.ID] = t
	if body.CPUCount != nil {
		t.CPUs = *body.CPUCount
	}
	if body.MemoryMB != nil {
		t.MemoryMB = *body.MemoryMB
	}
	t.build = &build{ID: newID("bld", 10), status: StatusWaiting, tags: tags}
	ts.saveLocked()
	return t.view(), nil
}

// Start checks the steps of build buildID of caller's template id and
// starts it in the background.
func (ts *Store) Start(caller, id, buildID string, body BuildStart) error {
	t, err := ts.ownedOrError(caller, id)
	if err != nil {
		return err
	}
	p, err := planBuild(body, func(name string) (string, bool) {
		if o, ok := ts.View(caller, name); ok && o.Image != "" {
			return o.Image, true
		}
		if ts.cfg.Preset == nil {
			return "", false
		}
		return ts.cfg.Preset(name)
	})
	if err != nil {
		return err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	b := t.build
	switch {
	case b == nil || b.ID != buildID:
		return errorf(404, "build %q of template %s not found", quote.Cut(buildID), t.ID)
	case b.status != StatusWaiting || b.logs != nil:
		return errorf(409, "build %s has started already", b.ID)
	}
	for i, h := range p.hashes {
		if _, up := t.uploads[h]; !up {
			return errorf(400, "steps: copy %d's files (%s) were not uploaded: ask GET /templates/%s/files/%s for the URL", i+1, h, t.ID, h)
		}
	}
	b.log("info", "", "build %s of template %s (%s) accepted", b.ID, t.Alias, t.ID)
	go ts.run(t, b, p, body)
	return nil
}

// run builds t: its uploads unpacked into a context, the steps run by
// the server's builder; the uploads and the context go when it ends.
func (ts *Store) run(t *template, b *build, p *plan, body BuildStart) {
	ts.slot <- struct{}{}
	defer func() { <-ts.slot }()
	ts.mu.Lock()
	b.status = StatusBuilding
	uploads := t.uploads
	t.uploads = map[string]string{}
	ts.saveLocked()
	ts.mu.Unlock()
	defer ts.dropUploads(t.Owner, uploads)
	fail := func(step, msg string) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		b.log("error", step, "%s", msg)
		b.status, b.reason, b.step = StatusError, msg, step
		ts.saveLocked()
	}
	dir, err := ts.workDir()
	if err != nil {
		fail("base", err.Error())
		return
	}
	ctxDir, err := os.MkdirTemp(dir, "context-")
	if err != nil {
		fail("base", err.Error())
		return
	}
	defer os.RemoveAll(ctxDir)
	var unpacked int64
	for _, h := range p.hashes {
		n, err := unpack(uploads[h], ctxDir, maxUnpacked-unpacked)
		if err != nil {
			fail("base", fmt.Sprintf("unpacking the files of hash %s: %v", h, err))
			return
		}
		unpacked += n
	}
	cpus, mem := t.CPUs, t.MemoryMB<<20
	if ts.cfg.MaxCPUs > 0 && (cpus <= 0 || cpus > ts.cfg.MaxCPUs) {
		cpus = ts.cfg.MaxCPUs
	}
	if ts.cfg.MaxMemoryBytes > 0 && (mem <= 0 || mem > ts.cfg.MaxMemoryBytes) {
		mem = ts.cfg.MaxMemoryBytes
	}
	prog := &progress{ts: ts, t: t}
	o := imagebuild.Options{
		Name: "boxer/e2b-" + t.ID + "-" + b.ID, Dockerfile: p.df, Context: ctxDir,
		Timeout: 10 * time.Minute, MemoryBytes: mem, CPUs: cpus, Pids: 256,
		AllowHosts: ts.cfg.AllowHosts, NoCache: body.Force, Progress: prog,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := ts.cfg.Build(ctx, o)
	if err != nil {
		var se *imagebuild.StepError
		msg := err.Error()
		step := stepName(prog.step)
		if errors.As(err, &se) {
			step = strconv.Itoa(se.Line)
			if se.Tail != "" {
				msg += "\n" + se.Tail
			}
		}
		fail(step, msg)
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.Image, t.StartCmd, t.ReadyCmd, t.Workdir, t.Updated = res.Name, body.StartCmd, body.ReadyCmd, p.workdir, time.Now()
	t.images[b.ID] = res.Name
	if err := ts.roomLocked(t.Owner, t, b.tags); err != nil {
		// Other builds of the key's took the room since: the tags it
		// has already move.
		b.log("warn", "finalize", "%v", err)
		b.tags = slices.DeleteFunc(b.tags, func(tag string) bool { _, ok := t.tags[tag]; return !ok })
	}
	t.setTagsLocked(b.ID, b.tags)
	b.log("info", "finalize", "template %s ready: image %s, %d steps, %d cached, tags %s", t.Alias, res.Name, res.Steps, res.Cached, strings.Join(b.tags, ", "))
	b.status = StatusReady
	ts.pruneLocked(ctx, t)
	ts.saveLocked()
}

// Status is a build's state and a page of its log.
type Status struct {
	TemplateID, BuildID, Status string
	Logs                        []LogEntry
	// Reason and Step say why and where a failed build failed.
	Reason, Step string
}

// Status is build buildID of caller's template id, with at most limit
// of its log's entries from offset.
func (ts *Store) Status(caller, id, buildID string, offset, limit int) (Status, error) {
	t, err := ts.ownedOrError(caller, id)
	if err != nil {
		return Status{}, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	b := t.build
	if b == nil || b.ID != buildID {
		return Status{}, errorf(404, "build %q of template %s not found", quote.Cut(buildID), t.ID)
	}
	st := Status{TemplateID: t.ID, BuildID: b.ID, Status: b.status, Logs: []LogEntry{}}
	for i := offset; i < len(b.logs) && len(st.Logs) < limit; i++ {
		st.Logs = append(st.Logs, b.logs[i])
	}
	if b.status == StatusError {
		st.Reason, st.Step = b.reason, b.step
	}
	return st, nil
}

// dropUploads removes a build's uploads and gives their room back to
// the key.
func (ts *Store) dropUploads(caller string, uploads map[string]string) {
	for _, p := range uploads {
		if st, err := os.Stat(p); err == nil {
			ts.mu.Lock()
			ts.used[caller] -= st.Size()
			ts.mu.Unlock()
		}
		_ = os.Remove(p)
		_ = os.Remove(filepath.Dir(p))
	}
}

// Check says whether caller has template id: nil, or a 404 naming it.
func (ts *Store) Check(caller, id string) error {
	_, err := ts.ownedOrError(caller, id)
	return err
}
