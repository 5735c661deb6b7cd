package e2b

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A bad parameter of the logs is a 400 naming it, before any sandbox is
// looked up.
func TestLogsParams(t *testing.T) {
	s := &Server{}
	for q, field := range map[string]string{
		"direction=sideways": "direction",
		"level=trace":        "level",
		"limit=1001":         "limit",
		"limit=-1":           "limit",
		"cursor=x":           "cursor",
	} {
		r := httptest.NewRequest("GET", "/v2/sandboxes/x/logs?"+q, nil)
		w := httptest.NewRecorder()
		s.handleLogsV2(w, r)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), field+": ") {
			t.Errorf("v2 %s: %d %s, want 400 naming %s", q, w.Code, w.Body, field)
		}
	}
	for q, field := range map[string]string{"start=soon": "start", "limit=x": "limit"} {
		r := httptest.NewRequest("GET", "/sandboxes/x/logs?"+q, nil)
		w := httptest.NewRecorder()
		s.handleLogs(w, r)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), field+": ") {
			t.Errorf("v1 %s: %d %s, want 400 naming %s", q, w.Code, w.Body, field)
		}
	}
}

// A sandbox's ring keeps its last maxLogEvents events, each field cut.
func TestLogRing(t *testing.T) {
	sb := &sandbox{}
	for i := range maxLogEvents + 10 {
		sb.note("info", "event", map[string]string{"n": strings.Repeat("x", i*10)})
	}
	got := sb.logs.all()
	if len(got) != maxLogEvents {
		t.Fatalf("%d events kept, want %d", len(got), maxLogEvents)
	}
	if n := len(got[0].fields["n"]); n != 100 {
		t.Errorf("the oldest kept has a field of %d bytes, want 100 (the first ten gone)", n)
	}
	if n := len(got[len(got)-1].fields["n"]); n > maxLogField+len("…") {
		t.Errorf("a field of %d bytes kept, want at most %d", n, maxLogField)
	}
}
