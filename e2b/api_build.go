package e2b

// The calls of E2B's Template.build and Template.buildInBackground: a
// template is requested (POST /v3/templates), its copy steps' files are
// uploaded (GET /templates/{id}/files/{hash}, then a PUT to the URL it
// gives), its build started (POST /v2/templates/{id}/builds/{buildID})
// and its status and logs polled (GET .../builds/{buildID}/status).
// Package templates does each; these handlers speak E2B's wire.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/e2b/templates"
	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/runner"
)

// uploadPrefix starts the path of every upload URL: boxer serves them
// itself, on the E2B listener, authenticated by a one-use token in the
// path.
const uploadPrefix = "/boxer/template-uploads/"

// buildRoutes adds the build calls to mux: 501 when the server has no
// builder.
func (s *Server) buildRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]http.HandlerFunc{
		"POST /v3/templates":                          s.handleRequestBuild,
		"GET /templates/{id}/files/{hash}":            s.handleFileLink,
		"POST /v2/templates/{id}/builds/{buildID}":    s.handleStartBuild,
		"GET /templates/{id}/builds/{buildID}/status": s.handleBuildStatus,
		"DELETE /templates/{id}":                      s.handleDeleteTemplate,
		"POST /templates/tags":                        s.handleAssignTags,
		"DELETE /templates/tags":                      s.handleRemoveTags,
		// /templates/{id}/tags would conflict with /templates/aliases/{alias}.
		"GET /templates/{id}/{what}": s.handleListTags,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete && isSnapshotID(r.PathValue("id")) {
				// A snapshot is deleted as a template.
				s.deleteSnapshot(w, r, r.PathValue("id"))
				return
			}
			if !s.tmpl.Enabled() {
				writeError(w, http.StatusNotImplemented, fmt.Sprintf("%s %s: this server builds no templates", r.Method, quote.Cut(r.URL.Path)))
				return
			}
			h(w, r)
		})
	}
}

// handleRequestBuild makes a template (or a new build of the caller's
// template of that alias).
func (s *Server) handleRequestBuild(w http.ResponseWriter, r *http.Request) {
	var body templates.Request
	if !s.decode(w, r, &body) {
		return
	}
	t, err := s.tmpl.Request(callerOf(r), body)
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{
		"templateID": t.ID, "buildID": t.BuildID, "public": false,
		"aliases": []string{t.Alias}, "names": []string{t.Alias}, "tags": t.Tags,
	})
}

// isPreset says whether name is one of boxer's own templates.
func isPreset(name string) bool {
	_, ok := presetImage(name)
	return ok
}

// presetImage is the image of a preset or of E2B's name for one.
func presetImage(name string) (string, bool) {
	lang, image, ok := templateOf(name)
	if !ok || image != "" {
		return "", false
	}
	for _, p := range runner.Presets() {
		if p.Name == lang {
			return p.Image, true
		}
	}
	return "", false
}

// handleFileLink is E2B's TemplateBuildFileUpload: present when this
// build has the files already, else the URL to PUT them to.
func (s *Server) handleFileLink(w http.ResponseWriter, r *http.Request) {
	present, tok, err := s.tmpl.FileLink(callerOf(r), r.PathValue("id"), r.PathValue("hash"))
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	if present {
		writeJSON(w, http.StatusCreated, map[string]any{"present": true})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	writeJSON(w, http.StatusCreated, map[string]any{"present": false, "url": scheme + "://" + r.Host + uploadPrefix + tok})
}

// handleUpload takes the files PUT to an upload URL.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		writeError(w, http.StatusMethodNotAllowed, "an upload URL takes PUT")
		return
	}
	if err := s.tmpl.Upload(strings.TrimPrefix(r.URL.Path, uploadPrefix), r.ContentLength, r.Body); err != nil {
		s.answerError(w, "", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleStartBuild checks the steps and starts the build in the
// background.
func (s *Server) handleStartBuild(w http.ResponseWriter, r *http.Request) {
	caller := callerOf(r)
	if err := s.tmpl.Check(caller, r.PathValue("id")); err != nil {
		s.answerError(w, "", err)
		return
	}
	var body templates.BuildStart
	if !s.decode(w, r, &body) {
		return
	}
	if err := s.tmpl.Start(caller, r.PathValue("id"), r.PathValue("buildID"), body); err != nil {
		s.answerError(w, "", err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// handleBuildStatus is E2B's TemplateBuildInfo: the status and the log
// from logsOffset, at most limit (100) entries.
func (s *Server) handleBuildStatus(w http.ResponseWriter, r *http.Request) {
	caller := callerOf(r)
	if err := s.tmpl.Check(caller, r.PathValue("id")); err != nil {
		s.answerError(w, "", err)
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
	st, err := s.tmpl.Status(caller, r.PathValue("id"), r.PathValue("buildID"), offset, limit)
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	entries, lines := []map[string]any{}, []string{}
	for _, e := range st.Logs {
		entries = append(entries, logWire(e))
		lines = append(lines, e.Time.UTC().Format(time.RFC3339)+" "+e.Message)
	}
	out := map[string]any{"templateID": st.TemplateID, "buildID": st.BuildID, "status": st.Status, "logs": lines, "logEntries": entries}
	if st.Status == templates.StatusError {
		out["reason"] = map[string]any{"message": st.Reason, "step": st.Step, "logEntries": []map[string]any{}}
	}
	writeJSON(w, http.StatusOK, out)
}

// logWire is e as E2B's BuildLogEntry.
func logWire(e templates.LogEntry) map[string]any {
	m := map[string]any{"timestamp": e.Time.UTC().Format(time.RFC3339Nano), "level": e.Level, "message": e.Message}
	if e.Step != "" {
		m["step"] = e.Step
	}
	return m
}

// handleDeleteTemplate deletes the caller's template and its image (the
// CLI's 'template delete'); another key's is not found.
func (s *Server) handleDeleteTemplate(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.tmpl.Delete(r.Context(), callerOf(r), id); err != nil {
		s.answerError(w, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
