//go:build !linux

package main

import "os"

// isTerminal reports false off Linux, where boxer runs nothing.
func isTerminal(*os.File) bool { return false }
