package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// TestStandbyMakersDoNotPileUp: a standby's maker exits as soon as a run
// claims its standby, so that makers do not pile up with the run rate:
// after 50 runs back to back, one or two remain (the last standby's, and
// perhaps one still making). A maker used to sleep until its standby's
// expiry (5 minutes) whether or not a run had taken it: 38 runs in two
// minutes left 24 makers (issue 42). The standby left is still claimed by
// the next run, and its maker is one of those left.
func TestStandbyMakersDoNotPileUp(t *testing.T) {
	const runs = 50
	env := withStandby("5m")
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Cleanup(func() { endStandbys(t) })
			args := []string{"--debug", "run", "--runtime", rt, "--lang", "bash", "-c", "echo ran"}
			took := 0
			for i := range runs {
				r := boxer(t, env, args...)
				if r.code != 0 || r.stdout != "ran\n" {
					t.Fatalf("run %d: %d %q %s", i, r.code, r.stdout, r.stderr)
				}
				if claimed(r) {
					took++
				}
			}
			if took < runs/4 {
				t.Errorf("%d of %d runs took a standby: too few to test their makers' exit", took, runs)
			}
			// The last run's maker removes its sandbox and makes the next
			// standby; every maker whose standby was taken has exited.
			waitStandbys(t, 1)
			var makers []int
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if makers = standbyMakers(); len(makers) <= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d standby makers alive 10 s after %d runs (%d took a standby), want at most 2: %v", len(makers), runs, took, makers)
				}
			}
			if len(makers) == 0 {
				t.Fatal("no standby maker alive with a standby waiting: it would be reaped as a leftover")
			}
			t.Logf("%d runs, %d took a standby; makers alive after: %d", runs, took, len(makers))
			// The waiting standby's maker (its run directory's owner) is
			// alive, and exits once the next run has taken it.
			standby := standbys(t)[0]
			owner, err := os.ReadFile(filepath.Join(stateDir, "runs", standby, "owner"))
			must(t, err)
			pidStr, _, _ := strings.Cut(string(owner), ":")
			maker, err := strconv.Atoi(pidStr)
			if err != nil || !slices.Contains(makers, maker) {
				t.Fatalf("standby %s's owner %q is none of the makers %v", standby, owner, makers)
			}
			if r := boxer(t, env, args...); r.code != 0 || !claimed(r) || !strings.Contains(r.stderr, standby) {
				t.Fatalf("the run after took no standby %s: %d %s", standby, r.code, r.stderr)
			}
			for deadline := time.Now().Add(5 * time.Second); slices.Contains(standbyMakers(), maker); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("maker %d alive 5 s after its standby %s was taken", maker, standby)
				}
			}
			// That run's maker makes the next standby: the cleanup's
			// SIGTERM must not find it half made.
			waitStandbyAlone(t)
		})
	}
}
