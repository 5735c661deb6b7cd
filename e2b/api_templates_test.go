package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// GET /templates lists every preset under its own name and E2B's names
// for it; other methods on /templates stay 501, and a teamID is refused.
func TestTemplateList(t *testing.T) {
	key := "e2b_" + strings.Repeat("ab", 20)
	s, err := New(nil, Config{Keys: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	h := s.controlPlane()
	do := func(method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("X-API-KEY", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := do("GET", "/templates")
	var got []struct {
		TemplateID string   `json:"templateID"`
		Aliases    []string `json:"aliases"`
		CPUs       float64  `json:"cpuCount"`
		MemoryMB   int64    `json:"memoryMB"`
		Status     string   `json:"buildStatus"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != http.StatusOK || err != nil {
		t.Fatalf("GET /templates: %d %v %s", w.Code, err, w.Body)
	}
	want := map[string][]string{
		"python":      {"base", "python"},
		"python-data": {"code-interpreter", "code-interpreter-v1", "python-data"},
		"bash":        {"bash"},
	}
	for _, tm := range got {
		if w, ok := want[tm.TemplateID]; ok && !slices.Equal(tm.Aliases, w) {
			t.Errorf("%s: aliases %q, want %q", tm.TemplateID, tm.Aliases, w)
		}
		delete(want, tm.TemplateID)
		if tm.CPUs <= 0 || tm.MemoryMB <= 0 || tm.Status != "ready" {
			t.Errorf("%s: %+v", tm.TemplateID, tm)
		}
	}
	if len(want) > 0 {
		t.Errorf("templates missing: %v in %+v", want, got)
	}
	if w := do("GET", "/templates?teamID=t1"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "teamID") {
		t.Errorf("GET /templates?teamID: %d %s", w.Code, w.Body)
	}
	for _, m := range []string{"POST", "DELETE"} {
		if w := do(m, "/templates"); w.Code != http.StatusNotImplemented || !strings.Contains(w.Body.String(), "templates is not supported") {
			t.Errorf("%s /templates: %d %s", m, w.Code, w.Body)
		}
	}
}
