package e2b

import (
	"net/http"
	"slices"
	"time"

	"github.com/boxer-dev/boxer/runner"
)

// E2B's template list (GET /templates, what `e2b template list` shows):
// boxer's templates are its presets, each under its own name and E2B's
// names for it (base, code-interpreter-v1), and the caller's own, built
// through this server (package templates). Deleting and publishing
// templates stay E2B's (501, api_unsupported.go).

// handleTemplates lists boxer's templates as E2B's Template objects, the
// figures those a sandbox of each gets (the server's defaults within its
// caps). boxer has no teams: a teamID is refused, never ignored.
func (s *Server) handleTemplates(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("teamID") {
		writeError(w, http.StatusBadRequest, "teamID: boxer has no teams: every key sees the server's templates")
		return
	}
	out := []map[string]any{}
	for _, p := range runner.Presets() {
		lang := p.Name
		limits, err := runner.Request{Lang: lang}.NormalizeWithin(s.cfg.Max)
		if err != nil {
			s.answerError(w, "", err)
			return
		}
		names := []string{}
		for alias, l := range e2bNames {
			if l == lang {
				names = append(names, alias)
			}
		}
		slices.Sort(names)
		names = append(names, lang)
		out = append(out, map[string]any{
			"templateID":  lang,
			"buildID":     p.Image,
			"buildStatus": "ready",
			"aliases":     names,
			"names":       names,
			"public":      true,
			"cpuCount":    limits.CPUs,
			"memoryMB":    limits.MemoryBytes >> 20,
			"diskSizeMB":  limits.TmpBytes >> 20,
			"envdVersion": EnvdVersion,
			// A preset is the server's own: it is as old as the
			// server that serves it.
			"createdAt":     s.started.UTC().Format(time.RFC3339),
			"updatedAt":     s.started.UTC().Format(time.RFC3339),
			"createdBy":     nil,
			"lastSpawnedAt": nil,
		})
	}
	for _, t := range s.tmpl.List(callerOf(r)) {
		out = append(out, map[string]any{
			"templateID":    t.ID,
			"buildID":       t.BuildID,
			"buildStatus":   t.BuildStatus,
			"aliases":       []string{t.Alias},
			"names":         []string{t.Alias},
			"public":        false,
			"cpuCount":      t.CPUs,
			"memoryMB":      t.MemoryMB,
			"diskSizeMB":    0,
			"envdVersion":   EnvdVersion,
			"createdAt":     t.Created.UTC().Format(time.RFC3339),
			"updatedAt":     or(t.Updated, t.Created).UTC().Format(time.RFC3339),
			"createdBy":     nil,
			"lastSpawnedAt": nil,
		})
	}
	writeJSON(w, http.StatusOK, out)
}
