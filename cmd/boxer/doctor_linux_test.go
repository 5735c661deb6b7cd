package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/daemon"
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

// TestRuncCheckNovember2026: doctor's runc line warns, in one line naming
// the CVE and what to do, on a runc older than 1.5.3 (1.5.2, and 1.4.4,
// which has the CVE's fix but not the read-only root's), and not on 1.5.3.
func TestRuncCheckNovember2026(t *testing.T) {
	tests := []struct {
		version string
		warn    bool
	}{
		{"1.5.2", true},
		{"1.4.4", true},
		{"1.5.3", false},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			// The runc the private containerd would run: the first on
			// its PATH, which starts with the containerd binary's
			// directory.
			bin := t.TempDir()
			for name, script := range map[string]string{
				"containerd": "#!/bin/sh\nexit 0\n",
				"runc":       "#!/bin/sh\necho runc version " + tc.version + "\necho spec: 1.3.0\n",
			} {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ch := runcCheck(daemon.Config{Binary: filepath.Join(bin, "containerd")}, "", false)
			warned := !ch.ok && !ch.required && strings.Contains(ch.detail, "CVE-2026-119101") && strings.Contains(ch.detail, "run 'make deps'")
			if warned != tc.warn || strings.Contains(ch.detail, "\n") || !strings.Contains(ch.detail, filepath.Join(bin, "runc")) {
				t.Errorf("runc %s: ok %t required %t %q, want a warning %t", tc.version, ch.ok, ch.required, ch.detail, tc.warn)
			}
		})
	}
}
