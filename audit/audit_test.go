package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/boxer-dev/boxer/egress"
)

// TestLog: one line a Write, whole under concurrent writers, with its
// time set; a nil Log writes nothing.
func TestLog(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Write(Entry{Event: EventEnded, Session: "s", Reason: "removed", Network: &egress.Report{Connections: 2, DeniedTotal: 1}})
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, line := range lines {
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Time.IsZero() || e.Event != EventEnded || e.Network == nil || e.Network.DeniedTotal != 1 {
			t.Errorf("line %q", line)
		}
	}
	var none *Log
	none.Write(Entry{Event: EventRun})
	New(nil).Write(Entry{Event: EventRun})
}

// TestCaller: a caller is named by its address and a hash, never by its
// credentials.
func TestCaller(t *testing.T) {
	tests := []struct {
		name, addr, auth, want string
	}{
		{"no credentials", "10.0.0.1:5555", "", "10.0.0.1"},
		{"a token", "10.0.0.1:5555", "Bearer s3cret-token-of-some-length", "10.0.0.1 token:"},
		{"no port", "@", "", "@"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Caller(tc.addr, tc.auth)
			if !strings.HasPrefix(got, tc.want) || tc.auth != "" && (strings.Contains(got, "s3cret") || len(got) != len(tc.want)+8) {
				t.Errorf("Caller(%q, %q) = %q, want %q and 8 hex digits", tc.addr, tc.auth, got, tc.want)
			}
		})
	}
}
