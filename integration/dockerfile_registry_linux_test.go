package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/google/go-containerregistry/pkg/registry"
)

// catSource is a static program that prints the files it is given: the
// only thing in the image the test pushes (as /hello).
const catSource = `package main

import (
	"os"
)

func main() {
	for _, f := range os.Args[1:] {
		b, err := os.ReadFile(f)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.Write(b)
	}
}
`

// pushCatImage pushes an image holding /hello, a static catSource, to
// ref on a registry: imported from a 'docker save' archive, pushed by
// containerd, and removed here, so that only the registry has it.
func pushCatImage(t *testing.T, ref string) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(catSource), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module cat\n\ngo 1.21\n"), 0o644))
	cmd := exec.Command("go", "build", "-o", "cat", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building cat: %v: %s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "cat"))
	must(t, err)
	if r := boxer(t, nil, "image", "import", dockerArchive(t, bin, ref)); r.code != 0 {
		t.Fatalf("import: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	img, err := client.GetImage(ctx, ref)
	must(t, err)
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, config.HostOptions{DefaultScheme: "http"})})
	if err := client.Push(ctx, ref, img.Target(), containerd.WithResolver(resolver)); err != nil {
		t.Fatalf("pushing to the test's registry: %v", err)
	}
	must(t, removeImage(t, ref))
}

// TestDockerfileFromRegistry: a Dockerfile's FROM names an image boxer
// does not have, on a registry this test serves (go-containerregistry's):
// the build pulls it (--plain-http; without, it fails naming FROM's line),
// clears what a foreign image may hold in a first layer, copies a file
// onto it, and the image runs; the pulled base stays stored, so a
// rebuild is all cache hits.
func TestDockerfileFromRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tok := token(t)
	ref := fmt.Sprintf("%s/base/cat:%s", host, tok)
	pushCatImage(t, ref)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.GetImage(ctx, ref); err == nil {
		t.Fatalf("%s is stored before the build: the test would not see it pulled", ref)
	}
	df := "FROM " + ref + "\nCOPY hello.txt /hello.txt\nCMD [\"/hello\", \"/hello.txt\"]\n"
	dir := buildDir(t, df, map[string]string{"hello.txt": "hello-" + tok + "\n"})
	name := "dfreg" + tok
	if r := dfBuild(t, nil, name, dir); r.code != 125 || !strings.Contains(r.stderr, "Dockerfile:1: FROM "+ref) {
		t.Errorf("over HTTPS: exit %d, want 125 naming line 1:\n%s", r.code, r.stderr)
	}
	r := dfBuild(t, nil, name, dir, "--plain-http")
	if r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("build:\n%s", r.stderr)
	run := boxer(t, nil, "run", "--image", "boxer/"+name, "--", "/hello", "/hello.txt")
	if want := "hello-" + tok + "\n"; run.stdout != want {
		t.Errorf("run: %q, want %q (stderr %q)", run.stdout, want, run.stderr)
	}
	if _, err := client.GetImage(ctx, ref); err != nil {
		t.Errorf("the pulled base is not stored: %v", err)
	}
	r = dfBuild(t, nil, name, dir, "--plain-http")
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 0 || cached != 1 {
		t.Errorf("rebuild: exit %d, %d ran, %d cached, want 0 and 1:\n%s", r.code, ran, cached, r.stderr)
	}
	must(t, removeImage(t, "boxer/"+name))
	must(t, removeImage(t, ref))
	assertNoBuildLeft(t)
}
