package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServerPIDAndPath(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "c.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pid, err := ServerPID("unix://" + sock)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("ServerPID = %d, %v, want %d", pid, err, os.Getpid())
	}
	path, source := ContainerdPath(sock)
	if path != os.Getenv("PATH") || !strings.Contains(source, "PATH of containerd pid") {
		t.Errorf("ContainerdPath = %q, %q, want this process's PATH", path, source)
	}
	// A socket nobody listens on any more.
	l.Close()
	if _, err := ServerPID(sock); err == nil {
		t.Errorf("ServerPID of a closed socket: no error")
	}
	if path, source := ContainerdPath(sock); path != DefaultPath || !strings.Contains(source, "default PATH") {
		t.Errorf("ContainerdPath of a closed socket = %q, %q, want the default PATH", path, source)
	}
}

func TestLookPathIn(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(dir1, "runc"), 0o644}, // not executable: skipped
		{filepath.Join(dir2, "runc"), 0o755},
	} {
		if err := os.WriteFile(f.path, []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path, want string
	}{
		{name: "first executable", path: dir1 + ":" + dir2, want: filepath.Join(dir2, "runc")},
		{name: "relative entries skipped", path: ".:rel:" + dir2, want: filepath.Join(dir2, "runc")},
		{name: "none", path: dir1, want: ""},
		{name: "empty", path: "", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LookPathIn("runc", tc.path)
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("LookPathIn(runc, %q) = %q, %v, want %q", tc.path, got, err, tc.want)
			}
		})
	}
}
