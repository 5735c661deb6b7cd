//go:build linux

package leftover

import (
	"os/exec"
	"slices"
	"testing"
)

// TestStandbyMakers finds a process that looks like a standby maker of a
// given binary (its argv ends in "standby"), and only those.
func TestStandbyMakers(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 5", "standby")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if got := StandbyMakers("/bin/sh"); !slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("StandbyMakers(/bin/sh) = %v, want it to hold %d", got, cmd.Process.Pid)
	}
	if got := StandbyMakers("/nonexistent/boxer"); len(got) != 0 {
		t.Errorf("StandbyMakers of a binary nobody runs = %v", got)
	}
}
