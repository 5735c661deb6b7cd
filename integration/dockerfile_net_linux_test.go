package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/internal/fakenet"
)

// TestDockerfileBuildPip: a RUN step pip-installs a package from the fake
// internet's index through the build's allowlist (boxer's egress, as a
// run's); the image runs with --image and imports it, sees the copied
// file, the ENV and the WORKDIR, and its config holds the USER and CMD.
// A rebuild is all cache hits; one changed RUN reruns from it alone.
func TestDockerfileBuildPip(t *testing.T) {
	n := internet(t)
	tok := token(t)
	trust := ""
	for _, kv := range n.TrustEnv("/etc/boxer-test-ca.pem") {
		trust += " " + kv
	}
	df := `FROM boxer/python
COPY ca.pem /etc/boxer-test-ca.pem
ENV` + trust + ` GREETING=hello-` + tok + `
WORKDIR /app
COPY main.py ./
RUN python3 -m pip install -q --no-cache-dir --break-system-packages --index-url https://` + fakenet.PyPIName + `/simple ` + fakenet.PyPIPackage + `
RUN echo ` + tok + ` > /app/stamp
USER 65534:65534
CMD ["python3", "/app/main.py"]
`
	dir := buildDir(t, df, map[string]string{
		"ca.pem":  string(n.CAPEM),
		"main.py": "import os, " + fakenet.PyPIPackage + "\nprint(" + fakenet.PyPIPackage + ".VALUE, os.environ['GREETING'], open('/app/stamp').read().strip(), os.getuid())\n",
	})
	name := "dfpip" + tok
	allow := []string{"--allow-host", fakenet.PyPIName}
	r := dfBuild(t, egressEnv(n), name, dir, allow...)
	if r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("cold build:\n%s", r.stderr)
	run := boxer(t, nil, "run", "--image", "boxer/"+name, "--", "python3", "/app/main.py")
	if want := "42 hello-" + tok + " " + tok + " 65534\n"; run.stdout != want {
		t.Errorf("run: %q, want %q (stderr %q)", run.stdout, want, run.stderr)
	}
	cfg := boxer(t, nil, "run", "--image", "boxer/"+name, "--", "sh", "-c", "pwd; ls /app")
	if !strings.Contains(cfg.stdout, "main.py") || !strings.Contains(cfg.stdout, "stamp") {
		t.Errorf("/app: %q %q", cfg.stdout, cfg.stderr)
	}
	img := imageConfig(t, "boxer/"+name)
	if img.User != "65534:65534" || img.WorkingDir != "/app" || strings.Join(img.Cmd, " ") != "python3 /app/main.py" {
		t.Errorf("image config: user %q workdir %q cmd %q", img.User, img.WorkingDir, img.Cmd)
	}
	r = dfBuild(t, egressEnv(n), name, dir, allow...)
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 0 || cached != 5 || r.wall.Seconds() >= 1 {
		t.Errorf("rebuild: exit %d in %s, %d ran, %d cached, want 0 and 5 under 1s:\n%s", r.code, r.wall, ran, cached, r.stderr)
	}
	t.Logf("cached rebuild in %s", r.wall)
	must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(strings.Replace(df, "echo "+tok, "echo "+tok+"-2", 1)), 0o644))
	r = dfBuild(t, egressEnv(n), name, dir, allow...)
	if ran, cached := steps(r.stderr); r.code != 0 || ran != 1 || cached != 4 || !strings.Contains(r.stderr, "1 sandboxes run") {
		t.Errorf("changed RUN: exit %d, %d ran, %d cached, want 1 and 4:\n%s", r.code, ran, cached, r.stderr)
	}
	run = boxer(t, nil, "run", "--image", "boxer/"+name, "--", "python3", "/app/main.py")
	if want := "42 hello-" + tok + " " + tok + "-2 65534\n"; run.stdout != want {
		t.Errorf("run after the change: %q, want %q (stderr %q)", run.stdout, want, run.stderr)
	}
	must(t, removeImage(t, "boxer/"+name))
	assertNoBuildLeft(t)
}

// TestDockerfileNoNetworkOffList: a RUN step reaches nothing without
// an allowlist, and nothing off it with one; the build fails at that step.
func TestDockerfileNoNetworkOffList(t *testing.T) {
	n := internet(t)
	tok := token(t)
	df := `FROM boxer/python
COPY ca.pem /etc/ca.pem
RUN python3 -c "import ssl, urllib.request; print(urllib.request.urlopen('https://` + fakenet.WebName + `/` + tok + `', context=ssl.create_default_context(cafile='/etc/ca.pem'), timeout=10).read())"
`
	dir := buildDir(t, df, map[string]string{"ca.pem": string(n.CAPEM)})
	for _, allow := range [][]string{nil, {"--allow-host", fakenet.PyPIName}} {
		r := dfBuild(t, egressEnv(n), "dfnet"+tok, dir, allow...)
		if r.code != 125 || !strings.Contains(r.stderr, "Dockerfile:3: RUN") || !strings.Contains(r.stderr, "exit status 1") {
			t.Errorf("allow %v: exit %d, want 125 naming line 3:\n%s", allow, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "hello from") {
			t.Errorf("allow %v: the step reached %s:\n%s", allow, fakenet.WebName, r.stderr)
		}
	}
	// The same step with the host on the list works: the failures above
	// were the allowlist's.
	r := dfBuild(t, egressEnv(n), "dfnet"+tok, dir, "--allow-host", fakenet.WebName)
	if r.code != 0 {
		t.Errorf("allowed: exit %d:\n%s", r.code, r.stderr)
	}
	must(t, removeImage(t, "boxer/dfnet"+tok))
	assertNoBuildLeft(t)
}
