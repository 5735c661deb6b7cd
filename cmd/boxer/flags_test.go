package main

import (
	"testing"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"256m", 256 << 20},
		{"1g", 1 << 30},
		{"512MiB", 512 << 20},
		{"64MiB", 64 << 20},
		{"1048576", 1 << 20},
		{"1.5g", 3 << 29},
		{"10k", 10 << 10},
	}
	for _, tc := range tests {
		got, err := runner.ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("runner.ParseSize(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "lots", "-5m", "1x", "m"} {
		if _, err := runner.ParseSize(bad); err == nil {
			t.Errorf("runner.ParseSize(%q) accepted", bad)
		}
	}
}

func TestParseUser(t *testing.T) {
	tests := []struct {
		in       string
		uid, gid uint32
		ok       bool
	}{
		{"65534:65534", 65534, 65534, true},
		{"1000", 1000, 1000, true},
		{"0:0", 0, 0, true},
		{"root", 0, 0, false},
		{"1000:wheel", 0, 0, false},
		{"-1:0", 0, 0, false},
	}
	for _, tc := range tests {
		uid, gid, err := runner.ParseUser(tc.in)
		if (err == nil) != tc.ok || tc.ok && (uid != tc.uid || gid != tc.gid) {
			t.Errorf("runner.ParseUser(%q) = %d:%d, %v", tc.in, uid, gid, err)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\nb  c\n"); got != "a b c" {
		t.Errorf("oneLine = %q", got)
	}
}

// TestTryCommand: 'boxer setup' suggests the first language's own example,
// quoted for the shell (bash's would fail as python).
func TestTryCommand(t *testing.T) {
	bash, err := runner.LookupPreset("bash")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tryCommand(bash), "boxer run --lang bash -c 'echo 1'"; got != want {
		t.Errorf("tryCommand(bash) = %q, want %q", got, want)
	}
	quoted := runner.Preset{Name: "x", Example: "print('1')"}
	if got, want := tryCommand(quoted), `boxer run --lang x -c 'print('\''1'\'')'`; got != want {
		t.Errorf("tryCommand = %q, want %q", got, want)
	}
}

// TestServeAndMCPShareOperatorFlags: every operator flag the two servers
// read is defined on both (a flag read but not defined reads as empty).
func TestServeAndMCPShareOperatorFlags(t *testing.T) {
	names := func(flags []cli.Flag) map[string]bool {
		m := map[string]bool{}
		for _, f := range flags {
			for _, n := range f.Names() {
				m[n] = true
			}
		}
		return m
	}
	serve, mcp := names(serveCommand().Flags), names(mcpCommand().Flags)
	for _, f := range []string{"allow-host", "max-net-bytes", "max-return-bytes", "secret", "secrets-dir", "inject", "warm", "warm-size", "max-timeout", "max-memory", "concurrency"} {
		if !serve[f] || !mcp[f] {
			t.Errorf("--%s: serve has it %v, mcp %v", f, serve[f], mcp[f])
		}
	}
}
