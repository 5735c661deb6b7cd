package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
)

// buildDir writes a Dockerfile and the context files into a new
// directory and returns it.
func buildDir(t *testing.T, dockerfile string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644))
	for name, body := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

// dfBuild runs 'boxer image build NAME -f DIR/Dockerfile DIR'.
func dfBuild(t *testing.T, extra []string, name, dir string, flags ...string) run {
	t.Helper()
	args := append([]string{"image", "build", name, "-f", filepath.Join(dir, "Dockerfile")}, flags...)
	return boxer(t, extra, append(args, dir)...)
}

// token is a random word that keeps one test's steps out of another's
// cache.
func token(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}

var stepLine = regexp.MustCompile(`(?m)^boxer: \[\d+/\d+\] (CACHED|done in)`)

// steps counts the steps a build ran and those the cache answered.
func steps(stderr string) (ran, cached int) {
	for _, m := range stepLine.FindAllStringSubmatch(stderr, -1) {
		if m[1] == "CACHED" {
			cached++
		} else {
			ran++
		}
	}
	return ran, cached
}

// assertNoBuildLeft: no build's lease, active snapshot or mount is left
// (with assertClean's containers, tasks, run directories and cgroups).
func assertNoBuildLeft(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, err := client.LeasesService().List(ctx)
	must(t, err)
	for _, l := range ls {
		t.Errorf("lease %s left behind (%v)", l.ID, l.Labels)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), "boxer-build-") {
		t.Errorf("a build's mount left behind:\n%s", mounts)
	}
	assertClean(t)
}

// TestDockerfileBuildLocal: a Dockerfile on boxer's python image with
// COPY, ENV, WORKDIR, ARG, USER, CMD and RUN steps builds, runs with
// --image, and builds again from the cache alone; one changed RUN reruns
// only from it.
func TestDockerfileBuildLocal(t *testing.T) {
	tok := token(t)
	df := `FROM boxer/python
ARG WHO=world
ENV GREETING="hello ` + tok + `"
WORKDIR /app
COPY hello.txt ./
COPY --chown=1000:1000 data/ /app/data/
RUN echo "$WHO" > who.txt && id -u > builder.txt
RUN python3 -c "import os; print(os.getcwd())" > cwd.txt
USER 1000:1000
CMD ["python3", "/app/main.py"]
`
	dir := buildDir(t, df, map[string]string{"hello.txt": "hi " + tok + "\n", "data/x.txt": "x\n"})
	name := "dflocal" + tok
	start := time.Now()
	r := dfBuild(t, nil, name, dir, "--build-arg", "WHO=boxer")
	cold := time.Since(start)
	if r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	if ran, cached := steps(r.stderr); ran != 5 || cached != 0 {
		t.Errorf("cold build: %d steps ran, %d cached, want 5 and 0:\n%s", ran, cached, r.stderr)
	}
	run := boxer(t, nil, "run", "--image", "boxer/"+name, "--", "sh", "-c",
		`cat /app/hello.txt /app/who.txt /app/builder.txt /app/cwd.txt; echo "$GREETING"; stat -c '%u:%g' /app/data/x.txt /app/hello.txt`)
	want := "hi " + tok + "\nboxer\n0\n/app\nhello " + tok + "\n1000:1000\n0:0\n"
	if run.stdout != want {
		t.Errorf("run: %q, want %q (stderr %q)", run.stdout, want, run.stderr)
	}
	start = time.Now()
	r = dfBuild(t, nil, name, dir, "--build-arg", "WHO=boxer")
	warm := time.Since(start)
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 0 || cached != 5 {
		t.Errorf("rebuild: exit %d, %d ran, %d cached, want 0 and 5:\n%s", r.code, ran, cached, r.stderr)
	}
	if warm > time.Second {
		t.Errorf("cached rebuild took %s, want under 1s", warm)
	}
	t.Logf("cold build %s, cached rebuild %s", cold, warm)
	// One changed RUN: the steps before it are cached, it and the next rerun.
	must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(strings.Replace(df, "id -u > builder.txt", "id -u > builder.txt; true", 1)), 0o644))
	r = dfBuild(t, nil, name, dir, "--build-arg", "WHO=boxer")
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 2 || cached != 3 {
		t.Errorf("one RUN changed: exit %d, %d ran, %d cached, want 2 and 3:\n%s", r.code, ran, cached, r.stderr)
	}
	if !strings.Contains(r.stderr, "2 sandboxes run") {
		t.Errorf("one RUN changed: not 2 sandboxes:\n%s", r.stderr)
	}
	ls := boxer(t, nil, "image", "ls")
	if !strings.Contains(ls.stdout, imagebuild.CachePrefix) {
		t.Errorf("image ls shows no cache entries:\n%s", ls.stdout)
	}
	must(t, removeImage(t, "boxer/"+name))
	assertNoBuildLeft(t)
}

func removeImage(t *testing.T, ref string) error {
	if r := boxer(t, nil, "image", "rm", ref); r.code != 0 {
		t.Errorf("image rm %s: %s", ref, r.stderr)
	}
	return nil
}
