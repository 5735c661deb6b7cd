package reaper

import (
	"strconv"
	"testing"
	"time"
)

// TestSessionEndIdle: a session is idle from the later of its label's time
// and its run directory's, and a touch in the future (a call under way)
// keeps it alive until then.
func TestSessionEndIdle(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	labels := map[string]string{
		LabelSessionDeadline: strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
		LabelSessionIdle:     "10",
		LabelSessionUsed:     strconv.FormatInt(now.Add(-time.Minute).Unix(), 10),
	}
	if got := LastUsed(labels, dir); !got.Equal(time.Unix(now.Add(-time.Minute).Unix(), 0)) {
		t.Errorf("LastUsed without a touch: %v", got)
	}
	if got := SessionEnd(labels, LastUsed(labels, dir), now, nil); got != EndIdle {
		t.Errorf("untouched for a minute: %q, want %q", got, EndIdle)
	}
	if err := TouchSession(dir, now.Add(-5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := SessionEnd(labels, LastUsed(labels, dir), now, nil); got != "" {
		t.Errorf("touched 5 s ago: %q, want alive", got)
	}
	if err := TouchSession(dir, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := SessionEnd(labels, LastUsed(labels, dir), now.Add(35*time.Second), nil); got != "" {
		t.Errorf("5 s after a call's timeout: %q, want alive", got)
	}
	if got := SessionEnd(labels, LastUsed(labels, dir), now.Add(41*time.Second), nil); got != EndIdle {
		t.Errorf("11 s after a call's timeout: %q, want %q", got, EndIdle)
	}
	labels[LabelSessionDeadline] = strconv.FormatInt(now.Unix(), 10)
	if got := SessionEnd(labels, LastUsed(labels, dir), now, nil); got != EndLifetime {
		t.Errorf("at its deadline: %q, want %q", got, EndLifetime)
	}
}
