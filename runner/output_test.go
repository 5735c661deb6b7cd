package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
)

func TestCappedKeepsPrefixAndDrains(t *testing.T) {
	var tee bytes.Buffer
	c := contract.NewCapped(10, &tee)
	for _, s := range []string{"hello ", "world, ", "and more"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: must always take everything", s, n, err)
		}
	}
	text, truncated := c.Text()
	if text != "hello worl" || !truncated || tee.String() != "hello worl" {
		t.Errorf("text %q truncated %v tee %q", text, truncated, tee.String())
	}
}

func TestValidUTF8PerByte(t *testing.T) {
	if got := contract.ValidUTF8([]byte("a\xff\xfeb é")); got != "a\uFFFD\uFFFDb é" {
		t.Errorf("got %q", got)
	}
}

func TestBuildEnvOverrides(t *testing.T) {
	got := strings.Join(box.BuildEnv([]string{"PATH=/bin", "HOME=/"}, []string{"HOME=/workspace"}, []string{"X=1"}), " ")
	if got != "PATH=/bin HOME=/workspace X=1" {
		t.Errorf("env %q", got)
	}
}

func TestCheckEnv(t *testing.T) {
	for _, kv := range []string{"A=1", "_x=", "LONG_NAME_2=a=b"} {
		if err := contract.CheckEnv(kv); err != nil {
			t.Errorf("%q refused: %v", kv, err)
		}
	}
	for _, kv := range []string{"=1", "1A=2", "A-B=1", "NOEQ", "A B=1"} {
		if err := contract.CheckEnv(kv); err == nil {
			t.Errorf("%q accepted", kv)
		}
	}
}

// TestCappedHoldsInitLine: while stderr may still be boxer-init's line it
// is not passed on; release passes it on, or drops it; anything else is
// passed on as it comes.
func TestCappedHoldsInitLine(t *testing.T) {
	line := "boxer-init: exec: \"nope\": executable file not found in $PATH\n"
	tests := []struct {
		name   string
		writes []string
		drop   bool
		before string // passed on before release
		after  string // passed on in all
	}{
		{"the line, dropped", []string{line[:5], line[5:]}, true, "", ""},
		{"the line, kept", []string{line}, false, "", line},
		{"other output", []string{"Traceback\n"}, false, "Traceback\n", "Traceback\n"},
		{"a prefix, then other", []string{"boxer", "-x\n"}, false, "boxer-x\n", "boxer-x\n"},
		{"the line and more", []string{line, "more"}, true, line + "more", line + "more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tee strings.Builder
			c := contract.NewCapped(1<<20, &tee)
			c.HoldInitLine()
			for _, w := range tc.writes {
				c.Write([]byte(w))
			}
			if tee.String() != tc.before {
				t.Errorf("before release: %q, want %q", tee.String(), tc.before)
			}
			c.Release(tc.drop)
			if tee.String() != tc.after {
				t.Errorf("after release: %q, want %q", tee.String(), tc.after)
			}
			if got, _ := c.Text(); got != strings.Join(tc.writes, "") {
				t.Errorf("kept %q", got)
			}
		})
	}
}
