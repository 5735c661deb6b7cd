package sessionfs

// A session's paths: how one in the sandbox is found under its roots.

import (
	"errors"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/runner/contract"
)

// TestParse: a path is cleaned as the sandbox's kernel reads it,
// then must be under /workspace, /tmp or /home/user.
func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		abs, rel string
		root     int
		bad      bool
	}{
		{name: "workspace file", in: "/workspace/a/b.txt", abs: "/workspace/a/b.txt", rel: "a/b.txt", root: 0},
		{name: "tmp itself", in: "/tmp/", abs: "/tmp", rel: ".", root: 1},
		{name: "home", in: "/home/user/.rc", abs: "/home/user/.rc", rel: ".rc", root: 2},
		{name: "dot dot inside", in: "/tmp/a/../b", abs: "/tmp/b", rel: "b", root: 1},
		{name: "dot dot across roots", in: "/tmp/../workspace/x", abs: "/workspace/x", rel: "x", root: 0},
		{name: "dot dot out", in: "/tmp/../etc/passwd", bad: true},
		{name: "above the root", in: "/workspace/../../etc", bad: true},
		{name: "root of all", in: "/", bad: true},
		{name: "home's parent", in: "/home", bad: true},
		{name: "another home", in: "/home/other/x", bad: true},
		{name: "prefix only", in: "/tmpx/a", bad: true},
		{name: "relative", in: "tmp/a", bad: true},
		{name: "empty", in: "", bad: true},
		{name: "NUL", in: "/tmp/a\x00b", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(contract.FieldPath, tc.in)
			var fe *contract.FieldError
			if tc.bad {
				if !errors.As(err, &fe) || fe.Field != contract.FieldPath {
					t.Fatalf("Parse(%q) = %+v, %v; want a FieldError naming path", tc.in, got, err)
				}
				return
			}
			if err != nil || got.Abs != tc.abs || got.Rel != tc.rel || got.root != tc.root {
				t.Errorf("Parse(%q) = %+v, %v; want %s %s root %d", tc.in, got, err, tc.abs, tc.rel, tc.root)
			}
		})
	}
}

// TestParseLong: a path longer than the kernel takes is refused, told cut
// short.
func TestParseLong(t *testing.T) {
	long := "/workspace/" + strings.Repeat("é", 3000)
	if _, err := Parse(contract.FieldPath, long); !errors.Is(err, contract.ErrNameTooLong) || len(err.Error()) > 400 {
		t.Errorf("Parse of %d bytes: %v", len(long), err)
	}
}
