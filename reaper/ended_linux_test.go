package reaper

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestEnded: a session's end is told to its caller only, for an hour,
// never for its removal, and the records stay few.
func TestEnded(t *testing.T) {
	state := t.TempDir()
	RecordEnded(state, "ns", "bxs-1", "alice", EndProcServer)
	RecordEnded(state, "ns", "bxs-2", "alice", EndRemoved)
	RecordEnded(state, "ns", "../x", "alice", EndIdle)
	if got, ok := Ended(state, "ns", "bxs-1", "alice"); !ok || got != EndProcServer {
		t.Errorf("its caller: %q %v, want %q", got, ok, EndProcServer)
	}
	if got, ok := Ended(state, "ns", "bxs-1", ""); !ok || got != EndProcServer {
		t.Errorf("any caller: %q %v", got, ok)
	}
	for _, c := range []struct{ ns, id, caller string }{
		{"ns", "bxs-1", "bob"},
		{"other", "bxs-1", "alice"},
		{"ns", "bxs-2", "alice"},
		{"ns", "../x", "alice"},
		{"ns", "bxs-3", "alice"},
	} {
		if got, ok := Ended(state, c.ns, c.id, c.caller); ok {
			t.Errorf("%+v: %q, want no record", c, got)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "ended", "x")); err == nil {
		t.Error("a record named out of its directory")
	}
	old := time.Now().Add(-EndedKeep - time.Minute)
	if err := os.Chtimes(filepath.Join(endedDir(state, "ns"), "bxs-1"), old, old); err != nil {
		t.Fatal(err)
	}
	for i := range endedMax + 10 {
		RecordEnded(state, "ns", "bxs-n"+strconv.Itoa(i), "alice", EndIdle)
	}
	// Counted at most once a minute: now.
	defer func(was time.Duration) { pruneEvery = was }(pruneEvery)
	pruneEvery = 0
	RecordEnded(state, "ns", "bxs-last", "alice", EndIdle)
	entries, _ := os.ReadDir(endedDir(state, "ns"))
	if len(entries) > endedMax+1 {
		t.Errorf("%d records kept, want at most %d", len(entries), endedMax)
	}
	if _, err := os.Stat(filepath.Join(endedDir(state, "ns"), "bxs-1")); err == nil {
		t.Error("a record older than an hour is kept")
	}
	if _, ok := Ended(state, "ns", "bxs-last", "alice"); !ok {
		t.Error("the newest record was pruned")
	}
}
