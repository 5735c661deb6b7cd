package snapshots

import "testing"

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"python": "boxer/python", "boxer/python": "boxer/python", "docker.io/library/python:3": "docker.io/library/python:3"} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBuildKey(t *testing.T) {
	a := BuildOptions{Name: "a", Packages: []string{"python3", "tzdata"}, Suite: "bookworm", Mirror: "http://m"}
	b := BuildOptions{Name: "b", Packages: []string{"tzdata", "python3", "python3"}, Suite: "bookworm", Mirror: "http://m"}
	if a.Key() != b.Key() {
		t.Error("package order, duplicates or the name changed the key")
	}
	for _, c := range []BuildOptions{
		{Packages: []string{"python3"}, Suite: "bookworm", Mirror: "http://m"},
		{Packages: a.Packages, Suite: "trixie", Mirror: "http://m"},
		{Packages: a.Packages, Suite: "bookworm", Mirror: "http://other"},
	} {
		if c.Key() == a.Key() {
			t.Errorf("inputs %+v share the key of %+v", c, a)
		}
	}
}
