package reaper

import (
	"strconv"
	"testing"
	"time"
)

// TestSessionEndPaused: a paused session's idle clock stops, its deadline
// does not.
func TestSessionEndPaused(t *testing.T) {
	now := time.Now()
	labels := map[string]string{
		LabelSessionDeadline: strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
		LabelSessionIdle:     "10",
		LabelSessionPaused:   strconv.FormatInt(now.Add(-time.Minute).Unix(), 10),
	}
	used := now.Add(-2 * time.Minute)
	if got := SessionEnd(labels, used, now, nil); got != "" {
		t.Errorf("paused, idle for 2m: %q, want alive", got)
	}
	delete(labels, LabelSessionPaused)
	if got := SessionEnd(labels, used, now, nil); got != EndIdle {
		t.Errorf("resumed, idle for 2m: %q, want %q", got, EndIdle)
	}
	labels[LabelSessionPaused] = strconv.FormatInt(now.Unix(), 10)
	labels[LabelSessionDeadline] = strconv.FormatInt(now.Unix(), 10)
	if got := SessionEnd(labels, used, now, nil); got != EndLifetime {
		t.Errorf("paused at its deadline: %q, want %q", got, EndLifetime)
	}
}
