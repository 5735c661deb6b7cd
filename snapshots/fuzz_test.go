package snapshots

import "testing"

// FuzzNormalizeRef: the name helpers never panic, and a name they return
// is one they return unchanged.
func FuzzNormalizeRef(f *testing.F) {
	for _, seed := range []string{"python", "boxer/python", "python:3", "docker.io/library/python:3.12",
		"ghcr.io/o/i@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"localhost:5000/x", "UPPER", "a//b", ":", "@", "", "x@sha256:ab"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if n := Normalize(name); Normalize(n) != n {
			t.Fatalf("Normalize(%q) = %q, and again %q", name, n, Normalize(n))
		}
		if r := NormalizeRef(name); NormalizeRef(r) != r {
			t.Fatalf("NormalizeRef(%q) = %q, and again %q", name, r, NormalizeRef(r))
		}
	})
}
