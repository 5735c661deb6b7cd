package userns

import "testing"

func TestParseRange(t *testing.T) {
	tests := []struct {
		name, in string
		want     Range
		ok       bool
	}{
		{"default", DefaultRange, Range{Start: 1 << 31, Count: 1 << 30}, true},
		{"one block", "65536:65536", Range{Start: 65536, Count: 65536}, true},
		{"root's ids", "0:65536", Range{}, false},
		{"unaligned", "100000:65536", Range{}, false},
		{"too small", "65536:1000", Range{}, false},
		{"past the end", "4294901760:65536", Range{}, false},
		{"no count", "65536", Range{}, false},
		{"words", "a:b", Range{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRange(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseRange(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
	if b := (Range{Start: 1 << 31, Count: 1 << 30}).Blocks(); b != 16384 {
		t.Errorf("Blocks = %d, want 16384", b)
	}
}
