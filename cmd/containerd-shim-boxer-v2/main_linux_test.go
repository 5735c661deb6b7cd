package main

import (
	"errors"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"
)

// TestTuning: the plugin is registered with the shim's plugins and, when
// loaded, sets the collector's target and GOMAXPROCS, then asks to be
// skipped (it serves nothing).
func TestTuning(t *testing.T) {
	registered := false
	for _, r := range registry.Graph(func(*plugin.Registration) bool { return false }) {
		if r.Type == tuning.Type && r.ID == tuning.ID {
			registered = true
		}
	}
	if !registered {
		t.Fatal("the tuning plugin is not in the shim's plugin graph")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(40))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(runtime.NumCPU() + 4)

	if _, err := tuning.InitFn(nil); !errors.Is(err, plugin.ErrSkipPlugin) {
		t.Errorf("InitFn returned %v, want ErrSkipPlugin", err)
	}
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Errorf("GC percent %d after tuning, want %d", got, gcPercent)
	}
	if got, want := runtime.GOMAXPROCS(0), min(maxProcs, runtime.NumCPU()); got != want {
		t.Errorf("GOMAXPROCS %d after tuning, want %d", got, want)
	}
}
