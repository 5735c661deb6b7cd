package integration

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/errdefs"
)

// TestStandbyOneMaker: a run that ends while a standby of its shape waits
// (one it could not take: another run's claim held it) starts no maker,
// and removes its own sandbox before it exits, as a cold run does. Four
// CLIs at once each started a maker, three of which found the standby
// made and only removed their run's sandbox: a boxer process each, which
// cost a fifth of the runs per second (issue 29).
func TestStandbyOneMaker(t *testing.T) {
	ctx := context.Background()
	env := withStandby("5m")
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Cleanup(func() {
				// A maker the run started (the failure) is removing its
				// sandbox: a SIGTERM before its handlers are set would
				// leave the sandbox behind.
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					if cs, err := client.Containers(ctx); err == nil && len(cs) <= 1 {
						break
					}
				}
				endStandbys(t)
			})
			args := []string{"--debug", "run", "--json", "--runtime", rt, "--lang", "bash", "-c", "echo ran"}
			if r := boxer(t, env, args...); r.code != 0 {
				t.Fatalf("first run: %d %s", r.code, r.stderr)
			}
			standby := waitStandbys(t, 1)[0]
			makers := standbyMakers()
			// A run taking the standby holds this lock while it does.
			ls := client.LeasesService()
			l, err := ls.Create(ctx, leases.WithID(reaper.ClaimLeasePrefix+standby), leases.WithLabel(reaper.LabelOwner, reaper.Self()))
			must(t, err)
			defer func() { must(t, ls.Delete(ctx, l)) }()

			r := boxer(t, env, args...)
			var res result
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Stdout != "ran\n" || claimed(r) {
				t.Fatalf("run beside a claimed standby: %d %q claimed %v %s", r.code, r.stdout, claimed(r), r.stderr)
			}
			if _, err := client.LoadContainer(ctx, res.ID); !errdefs.IsNotFound(err) {
				t.Errorf("the run's sandbox %s is there after the run (%v): handed to a maker, with a standby waiting", res.ID, err)
			}
			if now := standbyMakers(); !slices.Equal(now, makers) {
				t.Errorf("standby makers after the run: %v, want only %v: the run started one, with a standby waiting", now, makers)
			}
			if got := standbys(t); len(got) != 1 || got[0] != standby {
				t.Errorf("standbys after the run: %v, want only %s", got, standby)
			}
		})
	}
}
