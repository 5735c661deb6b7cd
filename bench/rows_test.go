//go:build linux

package main

import (
	"slices"
	"testing"
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
