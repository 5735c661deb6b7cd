//go:build !linux

package main

import "os"

// isTerminal reports false off Linux, where boxer runs nothing.
func isTerminal(*os.File) bool { return false }

// termSize knows no terminal off Linux.
func termSize(*os.File) (cols, rows uint32, ok bool) { return 0, 0, false }

// rawTerminal does nothing off Linux.
func rawTerminal(*os.File) (func(), error) { return func() {}, nil }
