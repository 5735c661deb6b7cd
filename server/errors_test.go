package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/runner"
)

// answerFields decodes an error answer and returns its keys' values; a
// key that is absent is absent from the map.
func answerFields(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	m := map[string]string{}
	for k, v := range raw {
		m[k] = fmt.Sprint(v)
	}
	return m
}

// TestSessionErrorAnswers: a refusal (4xx) names the request field at
// fault; a server fault (5xx), the session cap (429) and a client gone
// (499) name none, whatever error they carry.
func TestSessionErrorAnswers(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		create    bool
		wantCode  int
		wantField string
	}{
		{"bad field", &runner.FieldError{Field: runner.FieldMemory, Message: "must be at least 6MiB"}, true, http.StatusBadRequest, runner.FieldMemory},
		{"no such session", runner.ErrSessionNotFound, false, http.StatusNotFound, "id"},
		{"session ended", &runner.SessionEndedError{ID: "bxs-0123456789abcdef", Reason: "idle"}, false, http.StatusNotFound, "id"},
		{"no such file", runner.ErrFileNotFound, false, http.StatusNotFound, "path"},
		{"session cap", &runner.SessionLimitError{Max: 2}, true, http.StatusTooManyRequests, ""},
		{"caller's ceiling", &runner.LimitError{Limit: "max-sessions-per-caller", Max: 2, What: "sessions"}, true, http.StatusTooManyRequests, ""},
		{"caller's streams", &runner.LimitError{Limit: "max-streams-per-caller", Max: 32, What: "streams"}, false, http.StatusTooManyRequests, ""},
		{"server fault", errors.New("writing .boxer-session.py: open /run/boxer/runs/bxs-0123456789abcdef/code/.boxer-session.py: no such file or directory"), true, http.StatusInternalServerError, ""},
		{"server fault of a call", fmt.Errorf("reading session bxs-0123456789abcdef: %w", errors.New("unexpected end of JSON input")), false, http.StatusInternalServerError, ""},
		{"host fault", &fault.Error{What: "containerd is not answering", Do: "check 'boxer doctor'"}, true, http.StatusServiceUnavailable, ""},
		{"ended while made", &runner.SessionEndedError{ID: "bxs-0123456789abcdef", Reason: "server_shutdown"}, true, http.StatusServiceUnavailable, ""},
		{"client gone", runner.ErrInterrupted, false, 499, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code := sessionStatus(tc.err)
			if tc.create {
				code = createStatus(tc.err)
			}
			if code != tc.wantCode {
				t.Fatalf("status = %d, want %d", code, tc.wantCode)
			}
			rec := httptest.NewRecorder()
			writeJSON(rec, code, sessionAPIError(code, tc.err))
			m := answerFields(t, rec.Body.Bytes())
			field, named := m["field"]
			if tc.wantField == "" && named {
				t.Errorf("answer %s names field %q, want none", rec.Body, field)
			}
			if tc.wantField != "" && field != tc.wantField {
				t.Errorf("answer %s: field = %q, want %q", rec.Body, field, tc.wantField)
			}
			if m["error"] == "" || strings.HasPrefix(m["error"], "body ") {
				t.Errorf("answer %s: error = %q, want the message alone", rec.Body, m["error"])
			}
			var le *runner.LimitError
			if errors.As(tc.err, &le) && (m["limit"] != le.Limit || m["max"] != fmt.Sprint(le.Max)) {
				t.Errorf("answer %s: limit %q max %q, want %s %d", rec.Body, m["limit"], m["max"], le.Limit, le.Max)
			}
		})
	}
}

// TestQueueFullNamesNoField: a run refused because the queue is full is
// no field's fault; one refused for a field names it.
func TestQueueFullNamesNoField(t *testing.T) {
	s := New(nil, Config{Concurrency: 1})
	h := s.Handler()
	post := func(body string) (int, map[string]string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/runs", strings.NewReader(body)))
		return rec.Code, answerFields(t, rec.Body.Bytes())
	}
	if code, m := post(`{"lang":"python","code":"1","memory":"1k"}`); code != http.StatusBadRequest || m["field"] != runner.FieldMemory {
		t.Errorf("a bad memory: %d %v, want 400 naming %s", code, m, runner.FieldMemory)
	}
	s.slots <- struct{}{} // the one slot taken, no queue
	code, m := post(`{"lang":"python","code":"1"}`)
	if field, named := m["field"]; code != http.StatusTooManyRequests || named {
		t.Errorf("queue full: %d, field %q (named %v), want 429 naming no field", code, field, named)
	}
}
