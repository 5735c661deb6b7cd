package templates

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

func noTemplates(name string) (string, bool) {
	if name == "base" {
		return "boxer/python", true
	}
	return "", false
}

func TestPlanBuild(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	p, err := planBuild(BuildStart{
		FromTemplate: "base",
		Steps: []BuildStep{
			{Type: "COPY", Args: []string{"a.txt", "/app/", "", ""}, FilesHash: hash},
			{Type: "ENV", Args: []string{"A", "1", "B", "two words"}},
			{Type: "RUN", Args: []string{"pip install x", "root"}},
			{Type: "WORKDIR", Args: []string{"/app"}},
			{Type: "WORKDIR", Args: []string{"sub"}},
			{Type: "USER", Args: []string{"65534"}},
		},
	}, noTemplates)
	if err != nil {
		t.Fatal(err)
	}
	if p.df.From != "boxer/python" || len(p.df.Steps) != 6 || p.workdir != "/app/sub" || len(p.hashes) != 1 {
		t.Fatalf("plan: from %q, %d steps, workdir %q, hashes %v", p.df.From, len(p.df.Steps), p.workdir, p.hashes)
	}
	run := p.df.Steps[2]
	if c, ok := run.Cmd.(*instructions.RunCommand); !ok || run.User != "root" || run.Line != 3 || c.CmdLine[0] != "pip install x" {
		t.Errorf("RUN step: %+v", run)
	}
	if env := p.df.Steps[1].Cmd.(*instructions.EnvCommand); len(env.Env) != 2 || env.Env[1].Value != "two words" {
		t.Errorf("ENV step: %+v", env)
	}
	p, err = planBuild(BuildStart{FromImage: E2BBaseImage}, noTemplates)
	if err != nil || p.df.From != "boxer/python" {
		t.Errorf("the SDKs' default base image: %v %+v", err, p)
	}
}

func TestPlanBuildRefuses(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, c := range []struct {
		body BuildStart
		want string
	}{
		{BuildStart{}, "fromImage: a template starts"},
		{BuildStart{FromImage: "x", FromTemplate: "base"}, "fromTemplate: give fromImage or fromTemplate"},
		{BuildStart{FromTemplate: "someone-elses"}, `fromTemplate: no template "someone-elses"`},
		{BuildStart{FromImage: "x", FromImageRegistry: []byte(`{"type":"registry"}`)}, "fromImageRegistry: is not supported"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "HEALTHCHECK"}}}, "steps[0].type"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "RUN"}}}, "steps[0].args"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "ENV", Args: []string{"A"}}}}, "steps[0].args: ENV takes names and values"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "COPY", Args: []string{"a", "/b"}}}}, "steps[0].filesHash"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "COPY", Args: []string{"a", "/b", "", "0755"}, FilesHash: hash}}}, "copy's mode"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "COPY", Args: []string{"a", "/b", "user", ""}, FilesHash: hash}}}, "--chown takes numeric"},
		{BuildStart{FromImage: "x", Steps: []BuildStep{{Type: "RUN", Args: []string{"true", "user"}}}}, `USER "user": numeric`},
	} {
		_, err := planBuild(c.body, noTemplates)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.body, err, c.want)
		}
	}
}

// tarOf is a gzipped tar of the headers, each regular file's body its
// name.
func tarOf(t *testing.T, hdrs ...tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body = h.Name
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "files.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnpack(t *testing.T) {
	dir := t.TempDir()
	p := tarOf(t,
		tar.Header{Name: "site/", Typeflag: tar.TypeDir, Mode: 0o755},
		tar.Header{Name: "site/hello.txt", Typeflag: tar.TypeReg, Mode: 0o644},
		tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "site/hello.txt"},
	)
	n, err := unpack(p, dir, 1<<20)
	if err != nil || n != int64(len("site/hello.txt")) {
		t.Fatalf("unpack: %d %v", n, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "link")); err != nil || string(got) != "site/hello.txt" {
		t.Errorf("through the link: %q %v", got, err)
	}
}

func TestUnpackRefuses(t *testing.T) {
	outside := t.TempDir()
	for _, c := range []struct {
		name string
		hdrs []tar.Header
		want string
	}{
		{"dotdot", []tar.Header{{Name: "../x", Typeflag: tar.TypeReg}}, "leaves the template's directory"},
		{"absolute", []tar.Header{{Name: "/etc/x", Typeflag: tar.TypeReg}}, "leaves the template's directory"},
		{"device", []tar.Header{{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}}, "only files, directories and symlinks"},
		{"through a symlink", []tar.Header{
			{Name: "out", Typeflag: tar.TypeSymlink, Linkname: outside},
			{Name: "out/x", Typeflag: tar.TypeReg, Mode: 0o644},
		}, "escapes"},
		{"too large", []tar.Header{{Name: strings.Repeat("big", 100), Typeflag: tar.TypeReg}}, "unpack to more than"},
	} {
		dir := t.TempDir()
		_, err := unpack(tarOf(t, c.hdrs...), dir, 100)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if left, _ := os.ReadDir(outside); len(left) > 0 {
		t.Errorf("written outside: %v", left)
	}
}

// TestUploadBounded: a key's uploads are refused past its bound, whether
// the request says its length or not, each URL works once, two of one
// hash count once, and nothing of a refused upload stays.
func TestUploadBounded(t *testing.T) {
	dir := t.TempDir()
	ts, err := New(Config{MaxUpload: 100, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tm := &template{Template: Template{ID: "tplx", Alias: "x", Owner: "k"}, uploads: map[string]string{}}
	ts.byID[tm.ID] = tm
	hash := strings.Repeat("cd", 32)
	put := func(tok, body string, length int64) int {
		err := ts.Upload(tok, length, strings.NewReader(body))
		var e *Error
		switch {
		case err == nil:
			return 200
		case errors.As(err, &e):
			return e.Code
		}
		t.Fatalf("upload: %v", err)
		return 0
	}
	link := func() string {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		tok := newID("", 24)
		ts.tokens[tok] = upload{tmpl: tm, hash: hash}
		return tok
	}
	if code := put(link(), strings.Repeat("a", 101), 101); code != 413 {
		t.Errorf("declared too large: %d", code)
	}
	if code := put(link(), strings.Repeat("a", 101), -1); code != 413 {
		t.Errorf("too large, length unsaid: %d", code)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("refused uploads left %v", left)
	}
	tok := link()
	if code := put(tok, strings.Repeat("a", 60), 60); code != 200 {
		t.Errorf("within the bound: %d", code)
	}
	if code := put(tok, "again", 5); code != 404 {
		t.Errorf("a URL used twice: %d", code)
	}
	if code := put(link(), strings.Repeat("a", 60), 60); code != 413 {
		t.Errorf("past what the key has left: %d", code)
	}
	if code := put(link(), strings.Repeat("a", 30), 30); code != 200 || ts.used["k"] != 30 {
		t.Errorf("a second upload of one hash: %d, the key uses %d bytes, want 200 and 30", code, ts.used["k"])
	}
	ts.dropUploads("k", tm.uploads)
	if ts.used["k"] != 0 {
		t.Errorf("after the build, the key still uses %d bytes", ts.used["k"])
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("uploads left after the build: %v", left)
	}
}
