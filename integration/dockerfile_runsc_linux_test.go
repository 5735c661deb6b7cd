package integration

import (
	"strings"
	"testing"
)

// TestDockerfileRunsc: RUN steps on gVisor (--runtime runsc) keep what
// they write: the image holds the steps' files, owned as the step made
// them, and runs on runc and on runsc. A hostile step on runsc holds as
// on runc: its setuid bit is cleared in the image, its capabilities are
// the seven of a step, mount is refused.
func TestDockerfileRunsc(t *testing.T) {
	tok := token(t)
	dir := buildDir(t, `FROM boxer/python
WORKDIR /app
RUN echo "made on gvisor `+tok+`" > /app/made.txt && mkdir -p /app/d && echo nested > /app/d/n.txt && chown 1000:1000 /app/d/n.txt && uname -r > /app/kernel.txt
RUN cp /bin/ls /usr/local/bin/suid-`+tok+` && chmod 6755 /usr/local/bin/suid-`+tok+` && stat -c %a /usr/local/bin/suid-`+tok+` > /suid-inside
RUN grep CapEff /proc/self/status > /caps; mount -t tmpfs none /mnt 2>/mount-error && echo mounted > /mount-error || true
`, nil)
	name := "dfrunsc" + tok
	r := dfBuild(t, nil, name, dir, "--runtime", "runsc")
	if r.code != 0 {
		t.Fatalf("build on runsc: exit %d:\n%s", r.code, r.stderr)
	}
	t.Logf("build on runsc:\n%s", r.stderr)
	if ran, _ := steps(r.stderr); ran != 4 {
		t.Errorf("build on runsc: %d steps ran, want 4:\n%s", ran, r.stderr)
	}
	want := "made on gvisor " + tok + "\nnested\n1000:1000\n"
	for _, rt := range []string{"runc", "runsc"} {
		run := boxer(t, nil, "run", "--runtime", rt, "--image", "boxer/"+name, "--", "sh", "-c",
			`cat /app/made.txt /app/d/n.txt; stat -c '%u:%g' /app/d/n.txt; cat /app/kernel.txt /suid-inside; stat -c %a /usr/local/bin/suid-`+tok+`; cat /caps /mount-error`)
		lines := strings.Split(run.stdout, "\n")
		if !strings.HasPrefix(run.stdout, want) || len(lines) < 8 {
			t.Fatalf("on %s: %q (stderr %q), want the step's files first: %q", rt, run.stdout, run.stderr, want)
		}
		// uname inside the step: gVisor's kernel, not the host's.
		if !strings.HasSuffix(lines[3], "-gvisor") || lines[4] != "6755" || lines[5] != "755" || !strings.HasPrefix(lines[6], "CapEff:\t00000000000000fb") || strings.Contains(run.stdout, "mounted") {
			t.Errorf("on %s: %q, want gVisor's kernel in the step, 6755 inside it, 755 in the image, CapEff fb and no mount", rt, run.stdout)
		}
	}
	must(t, removeImage(t, "boxer/"+name))
	if r := dfBuild(t, nil, name, dir, "--runtime", "kata"); r.code != 125 || !strings.Contains(r.stderr, "--runtime") {
		t.Errorf("--runtime kata: exit %d, want 125 naming the flag:\n%s", r.code, r.stderr)
	}
	assertNoBuildLeft(t)
}
