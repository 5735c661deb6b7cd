//go:build !linux

package main

import "os"

// removeProbeDir removes dir: no runsc probe runs off Linux.
func removeProbeDir(dir string) {
	_ = os.RemoveAll(dir)
}

// initChecks: boxer-init runs on Linux only.
func initChecks() []check { return nil }
