//go:build linux

package main

// Standbys for boxer run's rows: a run made cold, or timed once a standby
// waits; the standbys ended when the bench ends.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/internal/leftover"
	containerd "github.com/containerd/containerd/v2/client"
)

// noStandby makes a boxer run cold: it neither takes nor leaves a standby.
func noStandby(cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = append(os.Environ(), "BOXER_STANDBY=0")
	return cmd
}

// standbyReady waits until a standby sandbox is there, its gate started:
// the "standby present" case a run with standbys is timed in.
func standbyReady(address string, want int) error {
	client, err := containerd.New(address, containerd.WithDefaultNamespace("boxer"))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cs, err := client.Containers(ctx, `labels."boxer.standby"`)
		if err != nil {
			return err
		}
		ready := 0
		for _, c := range cs {
			labels, err := c.Labels(ctx)
			if err != nil || labels["boxer.standby"] == "" {
				continue
			}
			if task, err := c.Task(ctx, nil); err == nil {
				if st, err := task.Status(ctx); err == nil && st.Status == containerd.Running {
					ready++
				}
			}
		}
		if ready >= want {
			return nil
		}
	}
	// The first run of all finds none: it leaves the first.
	return nil
}

// endStandbys asks the standby makers of the bench's boxer runs to remove
// their standbys now, and waits for them.
func endStandbys(boxerBin string) {
	self, err := exec.LookPath(boxerBin)
	if err != nil {
		return
	}
	self, _ = filepath.Abs(self)
	find := func() []int { return leftover.StandbyMakers(self) }
	for _, pid := range find() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(20 * time.Second); len(find()) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if left := find(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "bench: standby makers still there: %v\n", left)
	}
}
