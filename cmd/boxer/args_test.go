package main

import (
	"slices"
	"strings"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"flag after FILE", "image import f.tar --name x/y:1", "image import --name x/y:1 f.tar"},
		{"flag=value after FILE", "image import f.tar --name=x", "image import --name=x f.tar"},
		{"flags in order", "image import --name x f.tar", "image import --name x f.tar"},
		{"global flags first", "--namespace ns image import f.tar --name x", "--namespace ns image import --name x f.tar"},
		{"bool flag after REF", "image pull r:1 --plain-http", "image pull --plain-http r:1"},
		{"build flags after NAME", "image build mypy --packages a,b --suite trixie", "image build --packages a,b --suite trixie mypy"},
		{"a value like a flag", "session run bxs-1 -c -1", "session run -c -1 bxs-1"},
		{"stdin as -", "session cp - bxs-1:x", "session cp - bxs-1:x"},
		{"after --", "image rm a -- --name b", "image rm a -- --name b"},
		{"run's command line", "run --image i python3 -c print(1)", "run --image i python3 -c print(1)"},
		{"run after global flags", "--debug run --image i -- sh -c x", "--debug run --image i -- sh -c x"},
		{"unknown command", "frob a --b c", "frob a --b c"},
		{"group without subcommand", "image --help", "image --help"},
	}
	app := newApp()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := flagsFirst(app, append([]string{"boxer"}, strings.Fields(tc.in)...))
			if want := append([]string{"boxer"}, strings.Fields(tc.want)...); !slices.Equal(got, want) {
				t.Errorf("flagsFirst(%q) = %q, want %q", tc.in, got, want)
			}
		})
	}
}

func TestNearestFlag(t *testing.T) {
	flags := runCommand().Flags
	tests := []struct {
		typed, want string
	}{
		{"language", "lang"},
		{"langauge", "lang"},
		{"memroy", "memory"},
		{"jsno", "json"},
		{"tmp", "tmp-size"},
		{"stdin", "stdin-file"},
		{"timeot", "timeout"},
		{"frobnicate", ""},
		{"x", ""},
	}
	for _, tc := range tests {
		if got := nearestFlag(flags, tc.typed); got != tc.want {
			t.Errorf("nearestFlag(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}
