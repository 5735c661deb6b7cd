package sandbox

// Finding the helper programs boxer builds (boxer-wrap among them) and writing the wrapper files boxer-wrap reads.

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/boxer-dev/boxer/daemon"
)

// WrapName is boxer-wrap's file name (init/boxer-wrap.c): the interpreter
// of boxer's wrappers around the runc shim, runsc and runc, found where
// boxer-init is.
const WrapName = "boxer-wrap"

// WrapBinary finds boxer-wrap as initBinary finds boxer-init; empty when
// there is none, or when its path cannot stand in an interpreter line
// (the kernel ends the interpreter's path at a blank). Without it the
// wrappers are /bin/sh scripts, which cost a shell's start per runtime
// command.
func WrapBinary() string {
	p := HelperBinary(WrapName)
	if strings.ContainsAny(p, " \t\n") || len(p) > 120 {
		return ""
	}
	return p
}

// WrapFile is the content of a wrapper file that boxer-wrap at wrap
// interprets: a comment saying what it is, then one directive a line.
// ok is false when a directive's value holds a newline, which cannot be
// written as one.
func WrapFile(wrap, comment string, directives ...string) (content string, ok bool) {
	var b strings.Builder
	b.WriteString("#!" + wrap + "\n# Written by boxer: " + comment + "\n")
	for _, d := range directives {
		if strings.Contains(d, "\n") {
			return "", false
		}
		b.WriteString(d + "\n")
	}
	return b.String(), true
}

// HelperBinary finds one of the programs boxer builds beside itself:
// beside the running boxer binary (as 'make build' leaves them), then in
// boxer's libexec directory ('make deps'), then on PATH; an absolute
// path, or empty when there is none.
func HelperBinary(name string) string {
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); isExecutable(p) {
			return p
		}
	}
	if p, err := daemon.RuntimeBinary(name); err == nil {
		if p, err := filepath.Abs(p); err == nil {
			return p
		}
	}
	return ""
}

// isExecutable says whether path is a regular file someone may execute.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
