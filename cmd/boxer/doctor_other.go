//go:build !linux

package main

import (
	"os"

	"github.com/urfave/cli/v2"
)

// removeProbeDir removes dir: no runsc probe runs off Linux.
func removeProbeDir(dir string) {
	_ = os.RemoveAll(dir)
}

// initChecks: boxer-init runs on Linux only.
func initChecks() []check { return nil }

// usernsCheck fails off Linux.
func usernsCheck(*cli.Context) check {
	return check{name: "userns", required: true, detail: "user namespaces need Linux"}
}
