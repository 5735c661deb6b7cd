//go:build linux

package main

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRowOrder pins the contenders' rows, in the table's order, as run
// builds them (podman's and docker's, which need those installed, left
// out): report reads host python as cs[0] and the base of every ratio,
// runc run, as cs[1], and finds the other rows of its ratios by name.
func TestRowOrder(t *testing.T) {
	var cs []*contender
	cs = append(cs, baselines(t.TempDir(), "runc", "address", "image")...)
	cs = append(cs, boxerRuns("boxer", "address")...)
	cs = append(cs, runscRows("boxer", "address", "image", "wrapper")...)
	var names []string
	for _, c := range cs {
		names = append(names, c.name)
	}
	want := []string{
		"host python",
		"runc run (bundle)",
		"runc create, start, delete",
		"ctr run",
		"boxer run",
		"boxer run, standby",
		"boxer run, network allowlist",
		"ctr run, runsc",
		"boxer run, runsc",
		"boxer run, runsc, standby",
	}
	if !slices.Equal(names, want) {
		t.Errorf("rows %q, want %q", names, want)
	}
	for _, c := range cs {
		if want := c.name == "ctr run, runsc" || c.name == "boxer run, runsc" || c.name == "boxer run, runsc, standby"; (c.group == "runsc") != want {
			t.Errorf("row %q in group %q", c.name, c.group)
		}
	}
}

// TestProcRows pins issue 43's rows, in the order benchProcs times them,
// and checks that printProcRatios finds every row its ratios name.
func TestProcRows(t *testing.T) {
	want := []string{
		"runc exec `true` into a running hardened bundle container",
		"session call `pass` (warm interpreter, runc)",
		"exec `true` in a live session over HTTP, start to exit reported (runc)",
		"exec `true` in a live session over HTTP, start to exit reported (runsc)",
		"background start of `true` in a live session over HTTP, answered when started (runc)",
		"background start of `true` in a live session over HTTP, answered when started (runsc)",
		"PTY open in a live session over HTTP, to its first output (runc)",
		"PTY open in a live session over HTTP, to its first output (runsc)",
	}
	if got := procRowNames(true /* withRunsc */); !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	var rows []row
	for _, name := range append(want, e2bExistsRow, e2bTrueRow, e2bEchoRow) {
		rows = append(rows, row{name: name, times: []time.Duration{time.Millisecond}, rate1: 1, rate4: 2})
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	stdout := os.Stdout
	os.Stdout = w
	printProcRatios(rows)
	os.Stdout = stdout
	w.Close()
	printed, _ := io.ReadAll(r)
	lines := strings.Split(strings.TrimSpace(string(printed)), "\n")
	if len(lines) != 9 {
		t.Errorf("printProcRatios printed %d lines, want 9:\n%s", len(lines), printed)
	}
	for _, target := range []string{"(target <= 0.25)", "(target <= 2)"} {
		if !strings.Contains(string(printed), target) {
			t.Errorf("printProcRatios printed no %q:\n%s", target, printed)
		}
	}
}
