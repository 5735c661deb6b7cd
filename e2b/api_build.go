package e2b

// The calls of E2B's Template.build and Template.buildInBackground: a
// template is requested (POST /v3/templates), its copy steps' files are
// uploaded (GET /templates/{id}/files/{hash}, then a PUT to the URL it
// gives), its build started (POST /v2/templates/{id}/builds/{buildID})
// and its status and logs polled (GET .../builds/{buildID}/status).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/internal/quote"
)

// buildRoutes adds the build calls to mux: 501 when the server has no
// builder.
func (s *Server) buildRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]http.HandlerFunc{
		"POST /v3/templates":                          s.handleRequestBuild,
		"GET /templates/{id}/files/{hash}":            s.handleFileLink,
		"POST /v2/templates/{id}/builds/{buildID}":    s.handleStartBuild,
		"GET /templates/{id}/builds/{buildID}/status": s.handleBuildStatus,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if s.cfg.Build == nil {
				writeError(w, http.StatusNotImplemented, fmt.Sprintf("%s %s: this server builds no templates", r.Method, quote.Cut(r.URL.Path)))
				return
			}
			h(w, r)
		})
	}
}

// requestBuild is E2B's TemplateBuildRequestV3.
type requestBuild struct {
	Name     string   `json:"name"`
	Alias    string   `json:"alias"`
	Tags     []string `json:"tags"`
	TeamID   string   `json:"teamID"`
	CPUCount *float64 `json:"cpuCount"`
	MemoryMB *int64   `json:"memoryMB"`
}

// handleRequestBuild makes a template (or a new build of the caller's
// template of that alias).
func (s *Server) handleRequestBuild(w http.ResponseWriter, r *http.Request) {
	var body requestBuild
	if !s.decode(w, r, &body) {
		return
	}
	name := body.Name
	if name == "" {
		name = body.Alias
	}
	switch {
	case body.TeamID != "":
		writeError(w, http.StatusBadRequest, "teamID: boxer has no teams: a template is its key's")
		return
	case len(body.Tags) > 0:
		writeError(w, http.StatusBadRequest, "tags: is not supported by boxer: a template is built under its name alone")
		return
	case !aliasForm.MatchString(name):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("name: %q: a template's name is lowercase letters, digits, '.', '_' and '-', at most 63, without a tag", quote.Cut(name)))
		return
	case templates[name] != "" || isPreset(name):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("name: %q is one of boxer's own templates", name))
		return
	}
	caller := callerOf(r)
	ts := &s.tmpl
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, name)
	if ok && t.build != nil && (t.build.status == buildBuilding || t.build.status == buildWaiting && t.build.logs != nil) {
		writeError(w, http.StatusConflict, fmt.Sprintf("template %q is being built: wait for its build %s to end", name, t.build.ID))
		return
	}
	if !ok {
		t = &template{ID: newID("tpl"), Alias: name, Owner: caller, Created: time.Now(), uploads: map[string]string{}}
		ts.byID[t.ID] = t
	}
	if body.CPUCount != nil {
		t.CPUs = *body.CPUCount
	}
	if body.MemoryMB != nil {
		t.MemoryMB = *body.MemoryMB
	}
	t.build = &build{ID: newID("bld"), status: buildWaiting}
	writeJSON(w, http.StatusAccepted, map[string]any{
		"templateID": t.ID, "buildID": t.build.ID, "public": false,
		"aliases": []string{t.Alias}, "names": []string{t.Alias}, "tags": []string{},
	})
}

func isPreset(name string) bool {
	_, ok := presetImage(name)
	return ok
}

// ownedOr404 finds the caller's template of the request's {id}, or
// answers 404.
func (s *Server) ownedOr404(w http.ResponseWriter, r *http.Request) (*template, bool) {
	id := r.PathValue("id")
	t, ok := s.tmpl.owned(callerOf(r), id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("template %q not found", quote.Cut(id)))
	}
	return t, ok
}

// handleStartBuild checks the steps and starts the build in the
// background.
func (s *Server) handleStartBuild(w http.ResponseWriter, r *http.Request) {
	t, ok := s.ownedOr404(w, r)
	if !ok {
		return
	}
	var body buildStart
	if !s.decode(w, r, &body) {
		return
	}
	caller := callerOf(r)
	p, err := planBuild(body, func(name string) (string, bool) {
		if o, ok := s.tmpl.view(caller, name); ok && o.Image != "" {
			return o.Image, true
		}
		return presetImage(name)
	})
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	ts := &s.tmpl
	ts.mu.Lock()
	b := t.build
	switch {
	case b == nil || b.ID != r.PathValue("buildID"):
		ts.mu.Unlock()
		writeError(w, http.StatusNotFound, fmt.Sprintf("build %q of template %s not found", quote.Cut(r.PathValue("buildID")), t.ID))
		return
	case b.status != buildWaiting || b.logs != nil:
		ts.mu.Unlock()
		writeError(w, http.StatusConflict, fmt.Sprintf("build %s has started already", b.ID))
		return
	}
	for i, h := range p.hashes {
		if _, up := t.uploads[h]; !up {
			ts.mu.Unlock()
			writeError(w, http.StatusBadRequest, fmt.Sprintf("steps: copy %d's files (%s) were not uploaded: ask GET /templates/%s/files/%s for the URL", i+1, h, t.ID, h))
			return
		}
	}
	b.log("info", "", "build %s of template %s (%s) accepted", b.ID, t.Alias, t.ID)
	ts.mu.Unlock()
	go s.runBuild(t, b, p, body)
	w.WriteHeader(http.StatusAccepted)
}

// runBuild builds t: its uploads unpacked into a context, the steps run
// by the server's builder; the uploads and the context go when it ends.
func (s *Server) runBuild(t *template, b *build, p *plan, body buildStart) {
	ts := &s.tmpl
	ts.slot <- struct{}{}
	defer func() { <-ts.slot }()
	ts.mu.Lock()
	b.status = buildBuilding
	uploads := t.uploads
	t.uploads = map[string]string{}
	ts.mu.Unlock()
	defer s.dropUploads(t.Owner, uploads)
	fail := func(step, msg string) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		b.log("error", step, "%s", msg)
		b.status, b.reason, b.step = buildError, msg, step
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
	if s.cfg.Max.CPUs > 0 && (cpus <= 0 || cpus > s.cfg.Max.CPUs) {
		cpus = s.cfg.Max.CPUs
	}
	if s.cfg.Max.MemoryBytes > 0 && (mem <= 0 || mem > s.cfg.Max.MemoryBytes) {
		mem = s.cfg.Max.MemoryBytes
	}
	prog := &progress{ts: ts, t: t}
	o := imagebuild.Options{
		Name: "boxer/e2b-" + t.ID, Dockerfile: p.df, Context: ctxDir,
		Timeout: 10 * time.Minute, MemoryBytes: mem, CPUs: cpus, Pids: 256,
		AllowHosts: s.cfg.BuildAllowHosts, NoCache: body.Force, Progress: prog,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := s.cfg.Build(ctx, o)
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
	b.log("info", "finalize", "template %s ready: image %s, %d steps, %d cached", t.Alias, res.Name, res.Steps, res.Cached)
	b.status = buildReady
}

// handleBuildStatus is E2B's TemplateBuildInfo: the status and the log
// from logsOffset, at most limit (100) entries.
func (s *Server) handleBuildStatus(w http.ResponseWriter, r *http.Request) {
	t, ok := s.ownedOr404(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	offset, limit := 0, 100
	for _, v := range []struct {
		name string
		dst  *int
		max  int
	}{{"logsOffset", &offset, 1 << 30}, {"limit", &limit, 100}} {
		if s := q.Get(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > v.max {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("%s: a number from 0 to %d", v.name, v.max))
				return
			}
			*v.dst = n
		}
	}
	ts := &s.tmpl
	ts.mu.Lock()
	defer ts.mu.Unlock()
	b := t.build
	if b == nil || b.ID != r.PathValue("buildID") {
		writeError(w, http.StatusNotFound, fmt.Sprintf("build %q of template %s not found", quote.Cut(r.PathValue("buildID")), t.ID))
		return
	}
	entries, lines := []map[string]any{}, []string{}
	for i := offset; i < len(b.logs) && len(entries) < limit; i++ {
		e := b.logs[i]
		entries = append(entries, e.wire())
		lines = append(lines, e.Time.UTC().Format(time.RFC3339)+" "+e.Message)
	}
	out := map[string]any{"templateID": t.ID, "buildID": b.ID, "status": b.status, "logs": lines, "logEntries": entries}
	if b.status == buildError {
		reason := map[string]any{"message": b.reason, "step": b.step, "logEntries": []map[string]any{}}
		out["reason"] = reason
	}
	writeJSON(w, http.StatusOK, out)
}

// wire is e as E2B's BuildLogEntry.
func (e logEntry) wire() map[string]any {
	m := map[string]any{"timestamp": e.Time.UTC().Format(time.RFC3339Nano), "level": e.Level, "message": e.Message}
	if e.Step != "" {
		m["step"] = e.Step
	}
	return m
}

// dropUploads removes a build's uploads and gives their room back to
// the key.
func (s *Server) dropUploads(caller string, uploads map[string]string) {
	ts := &s.tmpl
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
