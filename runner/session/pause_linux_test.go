package session

import (
	"context"
	"errors"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
)

// freezer is a task whose Pause fails as runc's cgroup v1 freezer does
// while its processes start, fails times times with err.
type freezer struct {
	containerd.Task
	err   error
	times int
	calls int
}

func (f *freezer) Pause(context.Context) error {
	f.calls++
	if f.calls <= f.times {
		return f.err
	}
	return nil
}

// TestPauseTask: a freezer that gave up is tried again (runc: "unable to
// freeze", seen at 2 of 44 pauses of E2B's suites under load), up to
// pauseAttempts; any other failure is not.
func TestPauseTask(t *testing.T) {
	gaveUp := errors.New("OCI runtime pause failed: unable to freeze: unknown")
	for _, c := range []struct {
		name      string
		err       error
		times     int
		wantCalls int
		wantErr   bool
	}{
		{"gives up twice", gaveUp, 2, 3, false},
		{"always gives up", gaveUp, 100, pauseAttempts, true},
		{"another failure", errors.New("container not running"), 1, 1, true},
	} {
		f := &freezer{err: c.err, times: c.times}
		err := pauseTask(context.Background(), f)
		if f.calls != c.wantCalls || (err != nil) != c.wantErr {
			t.Errorf("%s: %d calls, error %v; want %d calls, error %v", c.name, f.calls, err, c.wantCalls, c.wantErr)
		}
	}
}
