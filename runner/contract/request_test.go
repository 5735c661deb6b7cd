package contract

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestNormalizeDefaults(t *testing.T) {
	got, err := Request{Lang: "python", Code: []byte("print(1)")}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	want := Request{
		Lang: "python", Code: []byte("print(1)"),
		Timeout: DefaultTimeout, MemoryBytes: DefaultMemory, CPUs: DefaultCPUs, Pids: DefaultPids,
		TmpBytes: DefaultTmpSize, OutputLimit: DefaultOutputLimit, UID: DefaultUID, GID: DefaultGID, UserSet: true,
		Runtime: DefaultRuntime, Network: DefaultNetwork,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Normalize = %+v, want %+v", got, want)
	}
	again, err := got.Normalize()
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Errorf("normalizing twice: %+v, %v", again, err)
	}
	// 0:0 is a user of its own, not the default.
	root, err := Request{Lang: "python", UserSet: true}.Normalize()
	if err != nil || root.UID != 0 || root.GID != 0 {
		t.Errorf("0:0 became %d:%d, %v", root.UID, root.GID, err)
	}
}

// TestNormalizeErrors pins every message Normalize gives, with the field it
// names, as each caller shows them (request terms; the CLI renders flags).
func TestNormalizeErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	py := func(f func(*Request)) Request {
		r := Request{Lang: "python", Code: []byte("1")}
		f(&r)
		return r
	}
	tests := []struct {
		name string
		req  Request
		want string // Error(): the field, then its message
	}{
		{"negative timeout", py(func(r *Request) { r.Timeout = -time.Second }), "timeout must be positive, like 30s, not -1s"},
		{"tiny memory", py(func(r *Request) { r.MemoryBytes = 1024 }), "memory must be at least 6MiB, not 1KiB"},
		{"negative memory", py(func(r *Request) { r.MemoryBytes = -1 }), "memory must be at least 6MiB, not -1"},
		{"tiny cpus", py(func(r *Request) { r.CPUs = 0.001 }), "cpus must be at least 0.01, not 0.001"},
		{"negative pids", py(func(r *Request) { r.Pids = -1 }), "pids must be at least 1, not -1"},
		{"negative tmp", py(func(r *Request) { r.TmpBytes = -5 }), "tmp_size must be larger than 0, not -5"},
		{"negative output", py(func(r *Request) { r.OutputLimit = -1 }), "output_limit must be larger than 0, not -1"},
		{"runtime", py(func(r *Request) { r.Runtime = "kata" }), `runtime must be runc or runsc, not "kata"`},
		{"network", py(func(r *Request) { r.Network = "host" }), `network must be none, not "host": sandboxes have no network`},
		{"unknown lang", Request{Lang: "cobol"}, `lang names unknown language "cobol": use one of bash, javascript, python, python-data, typescript`},
		{"lang and command", py(func(r *Request) { r.Args = []string{"true"} }), "command is for an image: with lang, the program is the code"},
		{"code without lang", Request{Code: []byte("1"), Image: "x", Args: []string{"true"}}, "code needs lang; without it, image and command say what runs"},
		{"nothing", Request{}, "lang is required, or image with command: nothing to run"},
		{"image without command", Request{Image: "boxer/bash"}, "command is required with image (or give lang): nothing to run"},
		{"env without value", py(func(r *Request) { r.Env = []string{"NOEQUALS"} }), `env "NOEQUALS" must be NAME=VALUE`},
		{"env empty name", py(func(r *Request) { r.Env = []string{"=1"} }), `env "=1" must be NAME=VALUE`},
		{"env bad name", py(func(r *Request) { r.Env = []string{"1X=2"} }), `env "1X=2": "1X" is not a valid variable name`},
		{"empty seccomp", py(func(r *Request) { r.Seccomp = &specs.LinuxSeccomp{} }), "seccomp_profile has no rules: boxer never runs without a seccomp filter"},
		{"copy-out onto a file", py(func(r *Request) { r.CopyOut = file }), "copy_out " + file + " exists and is not a directory"},
		{"copy-in a file", py(func(r *Request) { r.CopyIn = file }), "copy_in " + file + " is not a directory"},
		{"copy-in missing", py(func(r *Request) { r.CopyIn = dir + "/nope" }), "copy_in " + dir + "/nope is not a directory"},
		{"file outside", py(func(r *Request) { r.Files = map[string][]byte{"../x": nil} }), `files "../x" must be a relative path inside /workspace`},
		{"absolute file", py(func(r *Request) { r.Files = map[string][]byte{"/etc/x": nil} }), `files "/etc/x" must be a relative path inside /workspace`},
		{"files too big", py(func(r *Request) { r.TmpBytes = 8; r.Files = map[string][]byte{"a": make([]byte, 9)} }), "files hold 9 bytes, more than the workspace's 8: raise tmp_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.req.Normalize()
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Normalize = %v, want a *FieldError", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
			if f, _, _ := strings.Cut(tc.want, " "); fe.Field != f {
				t.Errorf("field = %q, want %q", fe.Field, f)
			}
		})
	}
}

// TestFieldErrorRender: the CLI names flags, in the field and in the
// message alike.
func TestFieldErrorRender(t *testing.T) {
	_, err := Request{Lang: "python", TmpBytes: 1, Files: map[string][]byte{"a": []byte("xy")}}.Normalize()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatal(err)
	}
	flag := func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") }
	if got, want := fe.Render(flag), "--files hold 2 bytes, more than the workspace's 1: raise --tmp-size"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	if got, want := fe.Text(nil), "hold 2 bytes, more than the workspace's 1: raise tmp_size"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

func TestNormalizeWithin(t *testing.T) {
	max := Maxima{Timeout: 10 * time.Second, MemoryBytes: 128 << 20, CPUs: 0.5, Pids: 32, TmpBytes: 16 << 20, OutputLimit: 1 << 10}
	got, err := Request{Lang: "python"}.NormalizeWithin(max)
	if err != nil {
		t.Fatal(err)
	}
	if got.Timeout != max.Timeout || got.MemoryBytes != max.MemoryBytes || got.CPUs != max.CPUs || got.Pids != max.Pids || got.TmpBytes != max.TmpBytes || got.OutputLimit != max.OutputLimit {
		t.Errorf("defaults not lowered to the maxima: %+v", got)
	}
	tests := []struct {
		req  Request
		want string
	}{
		{Request{Lang: "python", Timeout: time.Minute}, "timeout 1m0s is above this server's maximum of 10s"},
		{Request{Lang: "python", MemoryBytes: 1 << 30}, "memory 1GiB is above this server's maximum of 128MiB"},
		{Request{Lang: "python", CPUs: 2}, "cpus 2 is above this server's maximum of 0.5"},
		{Request{Lang: "python", Pids: 33}, "pids 33 is above this server's maximum of 32"},
		{Request{Lang: "python", TmpBytes: 32 << 20}, "tmp_size 32MiB is above this server's maximum of 16MiB"},
		{Request{Lang: "python", OutputLimit: 2 << 10}, "output_limit 2KiB is above this server's maximum of 1KiB"},
	}
	for _, tc := range tests {
		if _, err := tc.req.NormalizeWithin(max); err == nil || err.Error() != tc.want {
			t.Errorf("NormalizeWithin(%+v) = %v, want %q", tc.req, err, tc.want)
		}
	}
	// No maximum: the defaults.
	if got, err := (Request{Lang: "python"}).NormalizeWithin(Maxima{}); err != nil || got.MemoryBytes != DefaultMemory {
		t.Errorf("no maxima: %+v, %v", got, err)
	}
}

// TestParseLimits: values given explicitly, zero included, meet the same
// rules as Normalize's, and say what they accept.
func TestParseLimits(t *testing.T) {
	for _, c := range []struct {
		field, in string
		want      int64
		err       string
	}{
		{FieldMemory, "256m", 256 << 20, ""},
		{FieldMemory, "1k", 0, "memory must be at least 6MiB, not 1KiB"},
		{FieldMemory, "lots", 0, `memory must be a size, like 256m, 1g or 512MiB, not "lots"`},
		{FieldTmpSize, "-5m", 0, `tmp_size must be a size, like 256m, 1g or 512MiB, not "-5m"`},
		{FieldOutputLimit, "0", 0, "output_limit must be larger than 0, not 0B"},
	} {
		got, err := ParseSizeLimit(c.field, c.in)
		if c.err == "" && (err != nil || got != c.want) || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("ParseSizeLimit(%s, %q) = %d, %v; want %d, %q", c.field, c.in, got, err, c.want, c.err)
		}
	}
	if _, err := ParseTimeout("soon"); err == nil || err.Error() != `timeout must be a duration, like 30s or 2m, not "soon"` {
		t.Errorf("ParseTimeout(soon) = %v", err)
	}
	if _, err := ParseTimeout("0s"); err == nil || err.Error() != "timeout must be positive, like 30s, not 0s" {
		t.Errorf("ParseTimeout(0s) = %v", err)
	}
	if err := CheckLimit(FieldCPUs, 0); err == nil || err.Error() != "cpus must be at least 0.01, not 0" {
		t.Errorf("CheckLimit(cpus, 0) = %v", err)
	}
	if _, _, err := ParseUser("root"); err == nil || err.Error() != `user must be a numeric UID:GID, like 65534:65534, not "root"` {
		t.Errorf("ParseUser(root) = %v", err)
	}
}
