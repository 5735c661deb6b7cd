package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunscProbeCutOff: a KVM probe that hangs is cut off after about a
// second, and what it started, in a session of its own as runsc's sandbox
// is, ends with its directory.
func TestRunscProbeCutOff(t *testing.T) {
	needRoot(t)
	if _, err := os.Stat("/dev/kvm"); err != nil {
		t.Skip("no /dev/kvm: the KVM probe does not run")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A runsc that hangs, its "sandbox" a process in a session of its own
	// naming the probe's directory, as runsc's do.
	fake := filepath.Join(t.TempDir(), "runsc")
	script := "#!/bin/sh\nsetsid sh -c 'sleep 300' \"$TMPDIR/sandbox\" </dev/null >/dev/null 2>&1 &\necho starting\nsleep 300\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ch := runscPlatformCheck(fake, "kvm")
	took := time.Since(start)
	if ch.ok || !strings.Contains(ch.detail, "no answer within 1s: cut off") {
		t.Errorf("check %+v, want a cut-off probe", ch)
	}
	if took > 2500*time.Millisecond {
		t.Errorf("the probe took %s, want about 1s", took)
	}
	if pids := processesNaming(tmp + "/"); len(pids) > 0 {
		t.Errorf("processes of the probe left: %v", pids)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("left in TMPDIR: %v", entries)
	}
}
