package secrets

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
	return path
}

func TestLoadEnv(t *testing.T) {
	t.Setenv("BOXER_TEST_KEY", "s3cr3t\n")
	t.Setenv("BOXER_TEST_EMPTY", "")
	tests := []struct {
		name    string
		want    string
		wantErr string
	}{
		{name: "BOXER_TEST_KEY", want: "s3cr3t\n"},
		{name: "BOXER_TEST_EMPTY", wantErr: "secret BOXER_TEST_EMPTY: the value is empty"},
		{name: "BOXER_TEST_UNSET", wantErr: "secret BOXER_TEST_UNSET: boxer's environment has no BOXER_TEST_UNSET: export it, or give BOXER_TEST_UNSET=file:PATH or BOXER_TEST_UNSET=cmd:COMMAND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseSpec(tc.name)
			if err != nil {
				t.Fatalf("ParseSpec: %v", err)
			}
			got, err := spec.Load(context.Background())
			checkLoad(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// checkLoad checks what Load returned against a wanted value or error.
func checkLoad(t *testing.T, got []byte, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Load = %q, %v; want an error containing %q", got, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if string(got) != want {
		t.Errorf("Load = %q, want %q", got, want)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	exact := []byte("line one\r\nline two\n\n")
	writeFile(t, dir, "exact", exact)
	writeFile(t, dir, "empty", nil)
	writeFile(t, dir, "full", bytes.Repeat([]byte("x"), MaxValueBytes))
	writeFile(t, dir, "big", bytes.Repeat([]byte("x"), MaxValueBytes+1))
	if err := os.Symlink("exact", filepath.Join(dir, "link")); err != nil {
		t.Fatalf("symlink: %v", err)
	}
	if err := os.Symlink(".", filepath.Join(dir, "dirlink")); err != nil {
		t.Fatalf("symlink: %v", err)
	}
	tests := []struct {
		file    string
		want    string
		wantErr string
	}{
		{file: "exact", want: string(exact)},
		{file: "link", want: string(exact)},
		{file: "full", want: strings.Repeat("x", MaxValueBytes)},
		{file: "big", wantErr: "is larger than 64 KiB"},
		{file: "empty", wantErr: "secret K: the value is empty"},
		{file: "missing", wantErr: "does not exist: give the path of a file"},
		{file: ".", wantErr: "is a directory: give a regular file"},
		{file: "dirlink", wantErr: "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			spec, err := ParseSpec("K=file:" + filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatalf("ParseSpec: %v", err)
			}
			got, err := spec.Load(context.Background())
			checkLoad(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestLoadBadSpec(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{name: "bad name", spec: Spec{Name: "a-b"}, wantErr: `secret name "a-b"`},
		{name: "unknown kind", spec: Spec{Name: "K", Source: Source{Kind: 9}}, wantErr: "unknown source Kind(9)"},
		{name: "empty path", spec: Spec{Name: "K", Source: Source{Kind: FromFile}}, wantErr: "empty path"},
		{name: "empty command", spec: Spec{Name: "K", Source: Source{Kind: FromCmd}}, wantErr: "empty command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Load(context.Background())
			checkLoad(t, got, err, "", tc.wantErr)
		})
	}
}

// k8sSecretDir lays out dir as Kubernetes mounts a secret volume: the files
// live in a timestamped directory, ..data links to it, and each secret is
// a symlink through ..data.
func k8sSecretDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	ts := "..2024_05_01_12_00_00.123456789"
	if err := os.Mkdir(filepath.Join(dir, ts), 0o700); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatalf("symlink: %v", err)
	}
	for name, value := range files {
		writeFile(t, filepath.Join(dir, ts), name, []byte(value))
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatalf("symlink: %v", err)
		}
	}
	return dir
}

func TestLoadDir(t *testing.T) {
	dir := k8sSecretDir(t, map[string]string{"DB_PASS": "pw\n", "API_KEY": "k3y", "_x": "\x00\xff"})
	writeFile(t, dir, ".hidden", []byte("not a secret"))
	got, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	want := []Named{{"API_KEY", []byte("k3y")}, {"DB_PASS", []byte("pw\n")}, {"_x", []byte("\x00\xff")}}
	if len(got) != len(want) {
		t.Fatalf("LoadDir = %d secrets %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Errorf("LoadDir[%d] = %s %q, want %s %q", i, got[i].Name, got[i].Value, want[i].Name, want[i].Value)
		}
	}
}

func TestLoadDirErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string
	}{
		{
			name:    "bad name",
			setup:   func(t *testing.T, dir string) { writeFile(t, dir, "api-key", []byte("v")) },
			wantErr: `secret name "api-key": use letters, digits and _, not starting with a digit (each file's name is its secret's name)`,
		},
		{
			name: "subdirectory",
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "SUB"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "SUB is a directory: a secrets dir holds one file per secret",
		},
		{
			name: "symlink to a directory",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink("/", filepath.Join(dir, "ROOT")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "ROOT is a directory",
		},
		{
			name: "dangling symlink",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink("nowhere", filepath.Join(dir, "GONE")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "GONE does not exist",
		},
		{
			name:    "empty file",
			setup:   func(t *testing.T, dir string) { writeFile(t, dir, "EMPTY", nil) },
			wantErr: "secret EMPTY: the value is empty",
		},
		{
			name:    "too big",
			setup:   func(t *testing.T, dir string) { writeFile(t, dir, "BIG", make([]byte, MaxValueBytes+1)) },
			wantErr: "larger than 64 KiB",
		},
		{
			name: "too many",
			setup: func(t *testing.T, dir string) {
				for i := range MaxSecrets + 1 {
					writeFile(t, dir, "S"+strings.Repeat("x", i), []byte("v"))
				}
			},
			wantErr: "more than 64 secrets",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			got, err := LoadDir(dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("LoadDir = %v, %v; want an error containing %q", got, err, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "secrets dir "+dir+": ") {
				t.Errorf("LoadDir error %q does not name the dir", err)
			}
		})
	}
	if _, err := LoadDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("LoadDir(missing) = nil error, want one")
	}
}
