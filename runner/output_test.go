package runner

import (
	"bytes"
	"strings"
	"testing"
)

func TestCappedKeepsPrefixAndDrains(t *testing.T) {
	var tee bytes.Buffer
	c := newCapped(10, &tee)
	for _, s := range []string{"hello ", "world, ", "and more"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: must always take everything", s, n, err)
		}
	}
	text, truncated := c.text()
	if text != "hello worl" || !truncated || tee.String() != "hello worl" {
		t.Errorf("text %q truncated %v tee %q", text, truncated, tee.String())
	}
}

func TestValidUTF8PerByte(t *testing.T) {
	if got := ValidUTF8([]byte("a\xff\xfeb é")); got != "a\uFFFD\uFFFDb é" {
		t.Errorf("got %q", got)
	}
}

func TestBuildEnvOverrides(t *testing.T) {
	got := strings.Join(buildEnv([]string{"PATH=/bin", "HOME=/"}, []string{"HOME=/workspace"}, []string{"X=1"}), " ")
	if got != "PATH=/bin HOME=/workspace X=1" {
		t.Errorf("env %q", got)
	}
}

func TestCheckEnv(t *testing.T) {
	for _, kv := range []string{"A=1", "_x=", "LONG_NAME_2=a=b"} {
		if err := checkEnv(kv); err != nil {
			t.Errorf("%q refused: %v", kv, err)
		}
	}
	for _, kv := range []string{"=1", "1A=2", "A-B=1", "NOEQ", "A B=1"} {
		if err := checkEnv(kv); err == nil {
			t.Errorf("%q accepted", kv)
		}
	}
}
