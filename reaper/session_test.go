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

// TestSessionEndWhileMade: a session being made by a live process is its
// maker's, whatever its timeouts and its task's state; once its maker is
// gone it is over, unless it was made and has an heir (then it lives as
// a detached one: its timeouts and its sandbox); one being removed is over for its remover's reason, and
// left to that remover while it lives.
func TestSessionEndWhileMade(t *testing.T) {
	now := time.Now()
	dead := "999999999:1"
	stopped := func() bool { return false }
	base := func(extra map[string]string) map[string]string {
		labels := map[string]string{
			LabelSessionDeadline: strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
			LabelSessionIdle:     "1",
		}
		for k, v := range extra {
			labels[k] = v
		}
		return labels
	}
	tests := []struct {
		name         string
		labels       map[string]string
		used         time.Time
		want         string
		wantMade     bool
		wantRemoving bool
		wantEnding   string
	}{
		{"being made, task not started", base(map[string]string{LabelOwner: Self()}), now, "", true, false, ""},
		{"being made, idle timeout past", base(map[string]string{LabelOwner: Self()}), now.Add(-time.Minute), "", true, false, ""},
		{"being made, deadline past", base(map[string]string{LabelOwner: Self(), LabelSessionDeadline: strconv.FormatInt(now.Unix(), 10)}), now, "", true, false, ""},
		{"maker gone", base(map[string]string{LabelOwner: dead}), now, EndHolderGone, false, false, ""},
		{"maker with an heir gone", base(map[string]string{LabelOwner: dead, LabelSessionHeir: "serve"}), now, EndHolderGone, false, false, ""},
		{"made, holder gone", base(map[string]string{LabelOwner: dead, LabelSessionMade: "true"}), now, EndHolderGone, false, false, ""},
		{"made, holder with an heir gone, sandbox stopped", base(map[string]string{LabelOwner: dead, LabelSessionMade: "true", LabelSessionHeir: "serve"}), now, EndExited, false, false, ""},
		{"made, holder with an heir gone, idle timeout past", base(map[string]string{LabelOwner: dead, LabelSessionMade: "true", LabelSessionHeir: "serve"}), now.Add(-time.Minute), EndIdle, false, false, ""},
		{"ready, holder with an heir gone", base(map[string]string{LabelOwner: dead, LabelSessionMade: "true", LabelSessionHeir: "serve", LabelSessionReady: "true"}), now, EndHolderGone, false, false, ""},
		{"made, held, idle timeout past", base(map[string]string{LabelOwner: Self(), LabelSessionMade: "true"}), now.Add(-time.Minute), EndIdle, false, false, ""},
		{"made, detached, sandbox exited", base(map[string]string{LabelSessionMade: "true"}), now, EndExited, false, false, ""},
		{"made before the label, detached, sandbox exited", base(nil), now, EndExited, false, false, ""},
		{"being removed by a live process", base(map[string]string{LabelSessionMade: "true", LabelSessionEnding: EndIdle, LabelSessionEnder: Self()}), now, EndIdle, false, true, EndIdle},
		{"its remover died", base(map[string]string{LabelSessionMade: "true", LabelSessionEnding: EndRemoved, LabelSessionEnder: dead}), now, EndRemoved, false, false, EndRemoved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SessionEnd(tc.labels, tc.used, now, stopped); got != tc.want {
				t.Errorf("SessionEnd = %q, want %q", got, tc.want)
			}
			if got := BeingMade(tc.labels); got != tc.wantMade {
				t.Errorf("BeingMade = %v, want %v", got, tc.wantMade)
			}
			if why, got := BeingEnded(tc.labels); got != tc.wantRemoving || why != tc.wantEnding {
				t.Errorf("BeingEnded = %q, %v, want %q, %v", why, got, tc.wantEnding, tc.wantRemoving)
			}
		})
	}
}
