package e2b

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/boxer-dev/boxer/internal/quote"
)

// E2B's API paths that boxer does not serve, each with the feature it
// names in its 501: a client of E2B's API reaching one learns what boxer
// lacks, never that the endpoint does not exist. A path of E2B's API that
// boxer serves with another method gets 405 from the mux.
var unsupportedPaths = []struct{ pattern, feature string }{
	{"/health", "E2B's API health"},
	{"/teams", "teams (E2B's accounts)"},
	{"/teams/*/metrics", "team metrics"},
	{"/teams/*/metrics/max", "team metrics"},
	{"/sandboxes/metrics", "metrics of many sandboxes at once"},
	{"/sandboxes/*/refreshes", "refreshes (a sandbox's time is set with timeout)"},
	{"/templates", "templates"},
	{"/v2/templates", "templates"},
	{"/templates/*", "templates"},
	{"/v2/templates/*", "templates"},
	{"/templates/*/builds/*", "template builds"},
	{"/templates/*/builds/*/logs", "template builds"},
	{"/nodes", "nodes (E2B's cluster)"},
	{"/nodes/*", "nodes (E2B's cluster)"},
	{"/admin/*", "E2B's administration"},
	{"/admin/*/*", "E2B's administration"},
	{"/admin/*/*/*", "E2B's administration"},
	{"/admin/*/*/*/*", "E2B's administration"},
	{"/admin/*/*/*/*/*", "E2B's administration"},
	{"/access-tokens", "access tokens (boxer's keys are its server's --e2b-key-file)"},
	{"/access-tokens/*", "access tokens (boxer's keys are its server's --e2b-key-file)"},
	{"/api-keys", "API keys (boxer's keys are its server's --e2b-key-file)"},
	{"/api-keys/*", "API keys (boxer's keys are its server's --e2b-key-file)"},
	{"/volumes", "volumes"},
	{"/volumes/*", "volumes"},
	{"/secrets", "E2B's secrets store"},
	{"/secrets/*", "E2B's secrets store"},
}

// unsupportedFeature names the feature of E2B's API at path, or "" when
// path is not one of E2B's.
func unsupportedFeature(path string) string {
	got := strings.Split(strings.TrimSuffix(path, "/"), "/")
	for _, u := range unsupportedPaths {
		want := strings.Split(u.pattern, "/")
		if len(want) != len(got) {
			continue
		}
		ok := true
		for i := range want {
			if want[i] != "*" && want[i] != got[i] || want[i] == "*" && got[i] == "" {
				ok = false
				break
			}
		}
		if ok {
			return u.feature
		}
	}
	return ""
}

// handleAlias says whether a template exists by its alias
// (Template.exists()): boxer's templates are its presets, E2B's names
// for them and the caller's own that built; an image by reference is a
// template too, but no alias.
func (s *Server) handleAlias(w http.ResponseWriter, r *http.Request) {
	alias := r.PathValue("alias")
	// One of the caller's exists once a build of it is good: a
	// client that asks before it creates (Mastra's) builds it again.
	if t, ok := s.tmpl.View(callerOf(r), alias); ok && t.Image != "" {
		writeJSON(w, http.StatusOK, map[string]any{"templateID": t.ID, "public": false})
		return
	}
	if _, image, ok := templateOf(alias); ok && image == "" {
		writeJSON(w, http.StatusOK, map[string]any{"templateID": alias, "public": true})
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("template alias %q not found: boxer's templates are its presets (boxer image list) and E2B's names for them, base and code-interpreter-v1", quote.Cut(alias)))
}
