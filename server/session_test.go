package server

import (
	"testing"

	"github.com/boxer-dev/boxer/runner"
)

// TestSessionRequestRefuses: what a session does not take is refused
// naming its own field (the runner refuses return_files:
// TestSessionHTTP).
func TestSessionRequestRefuses(t *testing.T) {
	tests := []struct {
		field string
		sr    SessionRequest
	}{
		{"code", SessionRequest{RunRequest: RunRequest{Lang: "python", Input: Input{Code: "1"}}}},
		{"command", SessionRequest{RunRequest: RunRequest{Lang: "python", Command: []string{"true"}}}},
		{"stdin", SessionRequest{RunRequest: RunRequest{Lang: "python", Input: Input{Stdin: "x"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			_, err := tc.sr.sessionRequest(runner.Maxima{}, "anonymous")
			if ae := apiError(err); ae.Field != tc.field || ae.Message == "" {
				t.Errorf("err %v, want a %s field error", err, tc.field)
			}
		})
	}
	if _, err := (SessionRequest{RunRequest: RunRequest{Lang: "python"}, IdleTimeout: "1m"}).sessionRequest(runner.Maxima{}, "anonymous"); err != nil {
		t.Errorf("a plain session: %v", err)
	}
}

// TestSessionRequestPreload: preload false asks for a session that never
// is a ready one; unset or true may be.
func TestSessionRequestPreload(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		preload *bool
		want    bool
	}{{nil, false}, {&yes, false}, {&no, true}} {
		sr, err := (SessionRequest{RunRequest: RunRequest{Lang: "python-data", Preload: tc.preload}}).sessionRequest(runner.Maxima{}, "anonymous")
		if err != nil || sr.NoPreload != tc.want {
			t.Errorf("preload %v: NoPreload = %v (%v), want %v", tc.preload, sr.NoPreload, err, tc.want)
		}
	}
}
