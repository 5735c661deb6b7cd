package quote

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMessage(t *testing.T) {
	long := "/workspace/" + strings.Repeat("é", 1<<20)
	tests := []struct {
		name     string
		msg      string
		want     string
		contains []string
	}{
		{name: "short", msg: "sandbox x not found", want: "sandbox x not found"},
		{name: "short words", msg: strings.Repeat("word ", 40), want: strings.Repeat("word ", 40)},
		{name: "long path", msg: long + ": not found", contains: []string{"/workspace/éé", "…(2097164 bytes) not found"}},
		{name: "many words", msg: strings.Repeat("a ", 1<<20), contains: []string{"a a a", "…(2097152 bytes)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Message(tc.msg)
			if tc.want != "" && got != tc.want {
				t.Errorf("Message = %q, want %q", got, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(got, c) {
					t.Errorf("Message = %q, want it to contain %q", got, c)
				}
			}
			if len(got) > MaxMessage+32 {
				t.Errorf("len(Message) = %d, want at most %d", len(got), MaxMessage+32)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Message = %q: not valid UTF-8", got)
			}
		})
	}
}

func TestCut(t *testing.T) {
	if got := Cut("abc"); got != "abc" {
		t.Errorf("Cut(abc) = %q", got)
	}
	got := Cut(strings.Repeat("x", 1000))
	if want := strings.Repeat("x", MaxWord) + "…(1000 bytes)"; got != want {
		t.Errorf("Cut = %q, want %q", got, want)
	}
}
