package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPublicHealth: --public-health opens /metrics (and /healthz) without
// the token, and nothing else; each of several tokens is accepted.
func TestPublicHealth(t *testing.T) {
	for _, c := range []struct {
		public     bool
		path, auth string
		want       int
	}{
		{false, "/metrics", "", http.StatusUnauthorized},
		{true, "/metrics", "", http.StatusOK},
		{true, "/v1/openapi.json", "", http.StatusUnauthorized},
		{true, "/v1/openapi.json", "Bearer second-token-0123456789", http.StatusOK},
		{true, "/v1/openapi.json", "Bearer first-token-0123456789", http.StatusOK},
		{true, "/v1/openapi.json", "Bearer first-token-012345678", http.StatusUnauthorized},
	} {
		h := New(nil, Config{Tokens: []string{"first-token-0123456789", "second-token-0123456789"}, PublicHealth: c.public}).Handler()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("public %v GET %s (%q): %d, want %d", c.public, c.path, c.auth, rec.Code, c.want)
		}
	}
}
