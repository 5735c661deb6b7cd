package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/containerd/containerd/v2/core/content"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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
COPY notes/*.md notes
COPY --chown=1000:1000 data/ /app/data/
RUN echo "$WHO" > who.txt && id -u > builder.txt
RUN python3 -c "import os; print(os.getcwd())" > cwd.txt
USER 1000:1000
CMD ["python3", "/app/main.py"]
`
	dir := buildDir(t, df, map[string]string{"hello.txt": "hi " + tok + "\n", "data/x.txt": "x\n", "notes/a.md": "a\n", "notes/b.md": "b\n", "notes/c.txt": "c\n"})
	name := "dflocal" + tok
	start := time.Now()
	r := dfBuild(t, nil, name, dir, "--build-arg", "WHO=boxer")
	cold := time.Since(start)
	if r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	if ran, cached := steps(r.stderr); ran != 6 || cached != 0 {
		t.Errorf("cold build: %d steps ran, %d cached, want 6 and 0:\n%s", ran, cached, r.stderr)
	}
	// notes/*.md: the files it matches, into notes/ as a directory
	// (Docker's wildcard), not notes/c.txt.
	run := boxer(t, nil, "run", "--image", "boxer/"+name, "--", "sh", "-c",
		`cat /app/hello.txt /app/who.txt /app/builder.txt /app/cwd.txt; echo "$GREETING"; stat -c '%u:%g' /app/data/x.txt /app/hello.txt; ls /app/notes`)
	want := "hi " + tok + "\nboxer\n0\n/app\nhello " + tok + "\n1000:1000\n0:0\na.md\nb.md\n"
	if run.stdout != want {
		t.Errorf("run: %q, want %q (stderr %q)", run.stdout, want, run.stderr)
	}
	start = time.Now()
	r = dfBuild(t, nil, name, dir, "--build-arg", "WHO=boxer")
	warm := time.Since(start)
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 0 || cached != 6 {
		t.Errorf("rebuild: exit %d, %d ran, %d cached, want 0 and 6:\n%s", r.code, ran, cached, r.stderr)
	}
	if warm > time.Second {
		t.Errorf("cached rebuild took %s, want under 1s", warm)
	}
	t.Logf("cold build %s, cached rebuild %s", cold, warm)
	// One changed RUN: the steps before it are cached, it and the next rerun.
	must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(strings.Replace(df, "id -u > builder.txt", "id -u > builder.txt; true", 1)), 0o644))
	r = dfBuild(t, nil, name, dir, "--build-arg", "WHO=boxer")
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 2 || cached != 4 {
		t.Errorf("one RUN changed: exit %d, %d ran, %d cached, want 2 and 4:\n%s", r.code, ran, cached, r.stderr)
	}
	if !strings.Contains(r.stderr, "2 sandboxes run") {
		t.Errorf("one RUN changed: not 2 sandboxes:\n%s", r.stderr)
	}
	ls := boxer(t, nil, "image", "ls")
	if !strings.Contains(ls.stdout, imagebuild.CachePrefix) {
		t.Errorf("image ls shows no cache entries:\n%s", ls.stdout)
	}
	if ls := boxer(t, nil, "image", "ls", "--steps"); !strings.Contains(ls.stdout, "id -u > builder.txt; true") {
		t.Errorf("image ls --steps shows no step:\n%s", ls.stdout)
	}
	// Pruned, the cache is gone and the image it built still runs.
	if p := boxer(t, nil, "image", "prune"); p.code != 0 || !strings.Contains(p.stdout, imagebuild.CachePrefix) {
		t.Errorf("prune: exit %d %q %q", p.code, p.stdout, p.stderr)
	}
	if ls := boxer(t, nil, "image", "ls"); strings.Contains(ls.stdout, imagebuild.CachePrefix) {
		t.Errorf("cache entries left after prune:\n%s", ls.stdout)
	}
	if run := boxer(t, nil, "run", "--image", "boxer/"+name, "--", "cat", "/app/who.txt"); run.stdout != "boxer\n" {
		t.Errorf("run after prune: %q %q", run.stdout, run.stderr)
	}
	// By the name it was built with: stored as boxer/NAME.
	if r := boxer(t, nil, "image", "rm", name); r.code != 0 || r.stdout != "boxer/"+name+"\n" {
		t.Errorf("image rm %s: %d %q %q", name, r.code, r.stdout, r.stderr)
	}
	assertNoBuildLeft(t)
}

func removeImage(t *testing.T, ref string) error {
	if r := boxer(t, nil, "image", "rm", ref); r.code != 0 {
		t.Errorf("image rm %s: %s", ref, r.stderr)
	}
	return nil
}

// imageConfig reads the config of a stored image.
func imageConfig(t *testing.T, ref string) ocispec.ImageConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	img, err := client.GetImage(ctx, ref)
	must(t, err)
	desc, err := img.Config(ctx)
	must(t, err)
	data, err := content.ReadBlob(ctx, client.ContentStore(), desc)
	must(t, err)
	var cfg ocispec.Image
	must(t, json.Unmarshal(data, &cfg))
	return cfg.Config
}

// TestDockerfileRefused: an unsupported instruction, a COPY source that
// leaves the context through .. or a symlink: exit 125, one line naming
// the line, nothing built or left.
func TestDockerfileRefused(t *testing.T) {
	tok := token(t)
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret\n"), 0o644))
	for _, tc := range []struct {
		df, want string
		link     bool
	}{
		{"FROM boxer/python\nRUN true\nEXPOSE 80\n", "Dockerfile:3: EXPOSE is not supported", false},
		{"FROM boxer/python\nRUN --mount=type=cache,target=/c true\n", "Dockerfile:2: RUN is not supported", false},
		{"FROM boxer/python\nCOPY ../secret /x\n", "leaves the build context", false},
		{"FROM boxer/python\nCOPY link/secret /x\n", "leaves the build context", true},
		{"FROM boxer/python\nCOPY link /x\n", "leaves the build context", true},
	} {
		dir := buildDir(t, tc.df, map[string]string{"ok.txt": tok})
		if tc.link {
			must(t, os.Symlink(outside, filepath.Join(dir, "link")))
		}
		r := dfBuild(t, nil, "dfbad"+tok, dir)
		if r.code != 125 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, want 125 and %q:\n%s", tc.df, r.code, tc.want, r.stderr)
		}
		if strings.Contains(r.stderr, "host secret") {
			t.Errorf("%q: the host's file was read:\n%s", tc.df, r.stderr)
		}
	}
	if ls := boxer(t, nil, "image", "ls"); strings.Contains(ls.stdout, "dfbad"+tok) {
		t.Errorf("a refused build left an image:\n%s", ls.stdout)
	}
	assertNoBuildLeft(t)
}

// TestDockerfileHostileSteps: a step that leaves a setuid binary (the
// bit is cleared in the image), tries to mount, fork-bombs (the pids
// limit bites) and fills the disk (the step's --disk limit kills it);
// each failed build names its step and leaves nothing behind.
func TestDockerfileHostileSteps(t *testing.T) {
	tok := token(t)
	dir := buildDir(t, `FROM boxer/python
RUN cp /bin/ls /usr/local/bin/suid-`+tok+` && chmod 6755 /usr/local/bin/suid-`+tok+` && stat -c %a /usr/local/bin/suid-`+tok+` > /suid-inside
RUN grep CapEff /proc/self/status > /caps; mount -t tmpfs none /mnt 2>/mount-error && echo mounted > /mount-error || true
`, nil)
	r := dfBuild(t, nil, "dfsuid"+tok, dir)
	if r.code != 0 {
		t.Fatalf("build: exit %d:\n%s", r.code, r.stderr)
	}
	run := boxer(t, nil, "run", "--image", "boxer/dfsuid"+tok, "--", "sh", "-c", "cat /suid-inside; stat -c %a /usr/local/bin/suid-"+tok+"; cat /caps /mount-error")
	lines := strings.Split(run.stdout, "\n")
	if len(lines) < 4 || lines[0] != "6755" || lines[1] != "755" || !strings.HasPrefix(lines[2], "CapEff:\t00000000000000fb") || strings.Contains(run.stdout, "mounted") {
		t.Errorf("setuid step: %q %q, want 6755 inside the step, 755 in the image, CapEff fb and no mount", run.stdout, run.stderr)
	}
	must(t, removeImage(t, "boxer/dfsuid"+tok))

	for _, tc := range []struct {
		name, step string
		flags      []string
		want       []string
	}{
		{"forkbomb", `RUN python3 -c 'exec("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(60); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print(\"fork failed after\", n, e); raise SystemExit(3)")'`, []string{"--pids", "32"},
			[]string{"Dockerfile:2: RUN", "exit status 3", "fork failed after", "Resource temporarily unavailable"}},
		{"disk", `RUN dd if=/dev/zero of=/fill bs=1M count=2000 && sleep 5`, []string{"--disk", "64m"},
			[]string{"Dockerfile:2: RUN", "disk limit of 64 MiB"}},
	} {
		dir := buildDir(t, "FROM boxer/python\n"+tc.step+"\n", nil)
		r := dfBuild(t, nil, "df"+tc.name+tok, dir, tc.flags...)
		if r.code != 125 {
			t.Errorf("%s: exit %d, want 125:\n%s", tc.name, r.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: no %q in:\n%s", tc.name, w, r.stderr)
			}
		}
	}
	assertNoBuildLeft(t)
}

// TestDockerfileInterrupted: SIGINT during a RUN step ends the build
// (exit 125) and leaves nothing of it behind.
func TestDockerfileInterrupted(t *testing.T) {
	tok := token(t)
	dir := buildDir(t, "FROM boxer/python\nRUN echo "+tok+" started; sleep 120\n", nil)
	cmd := exec.Command(boxerBin, "--namespace", namespace, "image", "build", "dfint"+tok, "-f", filepath.Join(dir, "Dockerfile"), dir)
	cmd.Env = testEnv
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "[2/2] RUN") {
			break
		}
	}
	// The step's sandbox is running once its container is there.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctrs, err := client.Containers(context.Background())
		must(t, err)
		if len(ctrs) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGINT))
	rest, _ := io.ReadAll(stderr)
	out.Write(rest)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 {
		t.Errorf("interrupted build: %v, want exit 125:\n%s", err, out.String())
	}
	if ls := boxer(t, nil, "image", "ls"); strings.Contains(ls.stdout, "dfint"+tok) {
		t.Errorf("an interrupted build left its image:\n%s", ls.stdout)
	}
	assertNoBuildLeft(t)
}
