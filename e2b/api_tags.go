package e2b

// Template tags: E2B's Template.assignTags (POST /templates/tags),
// removeTags (DELETE /templates/tags) and getTags (GET
// /templates/{id}/tags). Package templates keeps them; another key's
// template is not found.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/boxer-dev/boxer/internal/quote"
)

// handleAssignTags points tags at the build its target ('name:tag')
// names: E2B's AssignTemplateTagsRequest, answered 201 with
// AssignedTemplateTags.
func (s *Server) handleAssignTags(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Target string   `json:"target"`
		Tags   []string `json:"tags"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	a, err := s.tmpl.AssignTags(r.Context(), callerOf(r), body.Target, body.Tags)
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"buildID": a.BuildID, "tags": a.Tags})
}

// handleRemoveTags removes tags of the caller's template: E2B's
// DeleteTemplateTagsRequest, answered 204.
func (s *Server) handleRemoveTags(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	if err := s.tmpl.RemoveTags(r.Context(), callerOf(r), body.Name, body.Tags); err != nil {
		s.answerError(w, "", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleListTags lists the tags of the caller's template (by ID or
// name): E2B's TemplateTag array.
func (s *Server) handleListTags(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("what") != "tags" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s (docs/e2b.md lists boxer's E2B API)", r.Method, quote.Cut(r.URL.Path)))
		return
	}
	tags, err := s.tmpl.Tags(callerOf(r), r.PathValue("id"))
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	out := make([]map[string]any, 0, len(tags))
	for _, g := range tags {
		out = append(out, map[string]any{"tag": g.Tag, "buildID": g.BuildID, "createdAt": g.Created.UTC().Format(time.RFC3339Nano)})
	}
	writeJSON(w, http.StatusOK, out)
}
