package session

// Ready sessions: which requests may take one.

import (
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
)

// TestReadyFor: which session requests may take a ready session (their
// shape is matched apart, by the pool's key).
func TestReadyFor(t *testing.T) {
	held := contract.SessionRequest{Request: contract.Request{Lang: "python-data"}, Held: true}
	tests := []struct {
		name string
		sr   func(contract.SessionRequest) contract.SessionRequest
		want bool
	}{
		{"held", func(sr contract.SessionRequest) contract.SessionRequest { return sr }, true},
		{"not held (the CLI's)", func(sr contract.SessionRequest) contract.SessionRequest { sr.Held = false; return sr }, false},
		{"preload false", func(sr contract.SessionRequest) contract.SessionRequest { sr.NoPreload = true; return sr }, false},
		{"files", func(sr contract.SessionRequest) contract.SessionRequest {
			sr.Files = map[string][]byte{"a": nil}
			return sr
		}, false},
		{"copy-in", func(sr contract.SessionRequest) contract.SessionRequest { sr.CopyIn = "/tmp"; return sr }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readyFor(tc.sr(held)); got != tc.want {
				t.Errorf("readyFor = %v, want %v", got, tc.want)
			}
		})
	}
}
