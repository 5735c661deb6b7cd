package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/internal/fakenet"
)

// sessionLeakProgram is hostile: a background process that waits for
// the test to attach, then prints the delivered secret whole, split
// across two writes with a pause between, on stderr and from the variable
// ",env" gives it.
const sessionLeakProgram = `
import os, sys, time
time.sleep(1)
v = open("/run/secrets/TOKEN").read().strip()
print("whole", v, flush=True)
sys.stdout.write("split " + v[:7]); sys.stdout.flush(); time.sleep(0.3)
sys.stdout.write(v[7:] + " end\n"); sys.stdout.flush()
os.write(2, ("stderr " + v + "\n").encode())
print("env", os.environ.get("TOKEN"), flush=True)
`

// sessionCallProgram prints the delivered secret from its file and its
// variable, and calls web.test's header echo, which the session's gateway
// gives the injected header (the echo leaves Authorization out).
const sessionCallProgram = `
import json, os, urllib.request
print("file", open("/run/secrets/TOKEN").read().strip())
print("env", os.environ.get("TOKEN"))
seen = json.loads(urllib.request.urlopen("https://web.test/headers", timeout=10).read())
print("proxied", seen.get("_host"), "authorization" in {k.lower() for k in seen})
print("api key here", os.path.exists("/run/secrets/API_KEY"))
`

// TestSessionSecrets: a session's delivered secret is its processes'
// file and variable for the session's life, masked in every output (a
// call's, a foreground command's, a background process's as it comes
// and when attached again); its injected secret reaches web.test as a
// header through the session's gateway in its keeper. Neither value is in
// a process's command line or environment on the host (the keeper's
// included, though the value came from its maker's environment), in a
// file of containerd's or boxer's (but the sandbox's memory-backed /run),
// or in the container's spec or labels; rm leaves nothing. On runc and
// runsc.
func TestSessionSecrets(t *testing.T) {
	n := internet(t)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			value, injected := secretValue(t), secretValue(t)
			src := secretFile(t, injected)
			env := append(egressEnv(n), "SSL_CERT_FILE="+n.CAFile, "TOKEN="+value)
			r := boxer(t, env, "session", "create", "--lang", "python", "--runtime", rt,
				"--secret", "TOKEN,env", "--secret", "API_KEY=file:"+src,
				"--allow-host", fakenet.WebName, "--inject", fakenet.WebName+":Authorization=Bearer {{secret:API_KEY}}")
			if r.code != 0 {
				t.Fatalf("session create: %d %s", r.code, r.stderr)
			}
			id := strings.TrimSpace(r.stdout)
			t.Cleanup(func() { boxer(t, nil, "session", "rm", id) })

			// A background process, followed live, then attached again.
			r = sessionExec(t, "", id, "--bg", "--tag", "leak", "--", "python3", "-c", sessionLeakProgram)
			if r.code != 0 {
				t.Fatalf("background: %d %q %q", r.code, r.stdout, r.stderr)
			}
			waitOutput(t, id, "leak", "split [secret:TOKEN] end")
			r = boxer(t, nil, "session", "attach", id, "leak")
			wantOut := "whole [secret:TOKEN]\nsplit [secret:TOKEN] end\nenv [secret:TOKEN]\n"
			if r.code != 0 || r.stdout != wantOut || r.stderr != "stderr [secret:TOKEN]\n" {
				t.Errorf("attach: %d %q %q, want %q and the stderr line masked", r.code, r.stdout, r.stderr, wantOut)
			}
			if ps := boxer(t, nil, "session", "ps", id, "--json"); strings.Contains(ps.stdout, value) {
				t.Errorf("ps shows the value")
			}

			// A call: masked, and its request to web.test carries the
			// injected header.
			before := len(n.Received("/headers"))
			r = boxer(t, nil, "session", "run", id, "-c", sessionCallProgram)
			wantCall := "file [secret:TOKEN]\nenv [secret:TOKEN]\nproxied web.test False\napi key here False\n"
			if r.code != 0 || r.stdout != wantCall {
				t.Errorf("call: %d %q %q, want %q", r.code, r.stdout, r.stderr, wantCall)
			}
			got := n.Received("/headers")[before:]
			if len(got) != 1 || len(got[0].Values("Authorization")) != 1 || got[0].Get("Authorization") != "Bearer "+injected {
				t.Errorf("web.test saw %d requests, want 1 with the injected Authorization", len(got))
			}
			// A foreground command: masked; the file is the sandbox
			// user's, read-only.
			if r := sessionExec(t, "", id, "--", "sh", "-c", `cat /run/secrets/TOKEN; echo; stat -c '%a %u' /run/secrets/TOKEN`); r.stdout != "[secret:TOKEN]\n400 65534\n" {
				t.Errorf("foreground: %d %q %q", r.code, r.stdout, r.stderr)
			}

			// Where the values are not, while the session lives.
			pid := keeperOf(t, id)
			for _, f := range []string{"cmdline", "environ"} {
				data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), f))
				if err != nil || strings.Contains(string(data), value) || strings.Contains(string(data), injected) {
					t.Errorf("the keeper's %s holds a value (%v)", f, err)
				}
			}
			for _, v := range []string{value, injected} {
				for _, p := range processesHolding(v) {
					t.Errorf("while the session lives, %s", p)
				}
			}
			runMount := filepath.Join(stateDir, "runs", id, "run") + "/"
			for _, dir := range []string{rootDir, stateDir, "/run/containerd"} {
				for _, hit := range filesHolding(t, dir, value) {
					if !strings.HasPrefix(hit, runMount) {
						t.Errorf("the delivered value is in %s", hit)
					}
				}
				if hits := filesHolding(t, dir, injected); len(hits) > 0 {
					t.Errorf("the injected value is in files: %v", hits)
				}
			}
			c, err := client.LoadContainer(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := json.Marshal(info.Spec)
			labels, _ := json.Marshal(info.Labels)
			for _, v := range []string{value, injected} {
				if strings.Contains(string(spec), v) || strings.Contains(string(labels), v) {
					t.Errorf("the container's spec or labels hold a value")
				}
			}

			if r := boxer(t, nil, "session", "rm", id); r.code != 0 {
				t.Errorf("rm: %d %s", r.code, r.stderr)
			}
			assertClean(t)
			for _, v := range []string{value, injected} {
				for _, dir := range []string{rootDir, stateDir, "/run/containerd"} {
					if hits := filesHolding(t, dir, v); len(hits) > 0 {
						t.Errorf("after rm, a value is in %v", hits)
					}
				}
				for _, p := range processesHolding(v) {
					t.Errorf("after rm, %s", p)
				}
			}
		})
	}
}

// TestSessionSecretBadInput: a session naming a secret boxer cannot load
// is refused in one line, exit 125, before anything is made.
func TestSessionSecretBadInput(t *testing.T) {
	n := internet(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown name", []string{"--secret", "BOXER_TEST_NOT_SET"}, "BOXER_TEST_NOT_SET"},
		{"inject to a host not allowed", []string{"--secret", "TOKEN=file:" + secretFile(t, "v"), "--inject", fakenet.WebName + ":Authorization=Bearer {{secret:TOKEN}}"}, "--allow-host " + fakenet.WebName},
	} {
		r := boxer(t, egressEnv(n), append(append([]string{"session", "create"}, tc.args...), "--lang", "python")...)
		if r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d stderr %q, want 125 and one line naming %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
	if r := boxer(t, nil, "session", "ls"); strings.Contains(r.stdout, "bxs-") {
		t.Errorf("a refused session is listed: %s", r.stdout)
	}
	assertClean(t)
}

// sessionHuntProgram is hostile: from inside a session it looks for two
// needles (pieces of its own injected secret, which its keeper holds, and
// of another session's delivered one) in every process's command line,
// environment and memory it can read, and in every file it can read.
const sessionHuntProgram = `
import os, re
needles = [n.encode() for n in NEEDLES]
found = []
def look(what, data):
    for n in needles:
        if n in data:
            found.append(what)
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    for f in ("cmdline", "environ"):
        try:
            look("/proc/%s/%s" % (pid, f), open("/proc/%s/%s" % (pid, f), "rb").read())
        except OSError:
            pass
    try:
        mem = open("/proc/%s/mem" % pid, "rb")
        for line in open("/proc/%s/maps" % pid):
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
            if m:
                lo, hi = int(m.group(1), 16), int(m.group(2), 16)
                try:
                    mem.seek(lo); look("/proc/%s/mem" % pid, mem.read(min(hi - lo, 1 << 24)))
                except (OSError, ValueError, OverflowError):
                    pass
    except OSError:
        pass
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev", "/code"):  # /code holds this program, needles and all
        dirs[:] = []
        continue
    for f in files:
        p = os.path.join(root, f)
        try:
            if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p) < 1 << 20:
                look(p, open(p, "rb").read())
        except OSError:
            pass
print("found", sorted(set(found)) if found else "nothing")
`

// TestSessionSecretsHostile: a program in a session looks for the secret
// its keeper injects, and for another session's delivered secret, in
// every process's command line, environment and memory it can reach and
// in every file it can read, and finds neither. On runc and runsc.
func TestSessionSecretsHostile(t *testing.T) {
	n := internet(t)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			injected, other := secretValue(t), secretValue(t)
			a := boxer(t, append(egressEnv(n), "SSL_CERT_FILE="+n.CAFile), "session", "create", "--lang", "python", "--runtime", rt,
				"--secret", "API_KEY=file:"+secretFile(t, injected), "--allow-host", fakenet.WebName,
				"--inject", fakenet.WebName+":Authorization=Bearer {{secret:API_KEY}}")
			b := boxer(t, nil, "session", "create", "--lang", "python", "--runtime", rt, "--secret", "OTHER=file:"+secretFile(t, other)+",env")
			if a.code != 0 || b.code != 0 {
				t.Fatalf("session create: %d %s / %d %s", a.code, a.stderr, b.code, b.stderr)
			}
			idA, idB := strings.TrimSpace(a.stdout), strings.TrimSpace(b.stdout)
			t.Cleanup(func() { boxer(t, nil, "session", "rm", idA, idB) })
			// B's process holds its value in its environment meanwhile.
			if r := sessionExec(t, "", idB, "--bg", "--", "sleep", "60"); r.code != 0 {
				t.Fatalf("background in B: %d %s", r.code, r.stderr)
			}
			// A's keeper has used its header once.
			if r := boxer(t, nil, "session", "run", idA, "-c", `import urllib.request; urllib.request.urlopen("https://web.test/headers", timeout=10).read(); print("ok")`); r.stdout != "ok\n" {
				t.Fatalf("A's call: %d %q %q", r.code, r.stdout, r.stderr)
			}
			code := strings.Replace(sessionHuntProgram, "NEEDLES", `["`+injected[3:23]+`", "`+other[3:23]+`"]`, 1)
			r := boxer(t, nil, "session", "run", idA, "--timeout", "120s", "-c", code)
			if r.code != 0 || r.stdout != "found nothing\n" {
				t.Errorf("the hunt in A: %d %q %q, want found nothing", r.code, r.stdout, r.stderr)
			}
			if r := boxer(t, nil, "session", "rm", idA, idB); r.code != 0 {
				t.Errorf("rm: %d %s", r.code, r.stderr)
			}
			assertClean(t)
		})
	}
}

// TestSessionSecretsHTTP: over HTTP a session names a secret the server
// loaded; a call and a background process print it, and both answers
// carry only its mask.
func TestSessionSecretsHTTP(t *testing.T) {
	value := secretValue(t)
	s := startServer(t, "--secret", "TOKEN=file:"+secretFile(t, value))
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			code, data := sessionHTTP(t, s, "", "POST", "/v1/sessions", `{"lang":"python","runtime":"`+rt+`","secrets":["TOKEN"]}`)
			var sess struct{ ID string }
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			base := "/v1/sessions/" + sess.ID
			code, data = sessionHTTP(t, s, "", "POST", base+"/runs", `{"code":"print(open('/run/secrets/TOKEN').read().strip())"}`)
			if code != 200 || !strings.Contains(string(data), `"stdout":"[secret:TOKEN]\n"`) || strings.Contains(string(data), value) {
				t.Errorf("call: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, "", "POST", base+"/processes", `{"args":["sh","-c","cat /run/secrets/TOKEN"]}`)
			var p struct{ ID int }
			if code != 201 || json.Unmarshal(data, &p) != nil {
				t.Fatalf("process: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, "", "GET", base+"/processes/"+strconv.Itoa(p.ID)+"/output", "")
			// Output data is base64 in the stream's JSON lines.
			masked := base64.StdEncoding.EncodeToString([]byte("[secret:TOKEN]\n"))
			if code != 200 || !strings.Contains(string(data), `"data":"`+masked+`"`) || strings.Contains(string(data), base64.StdEncoding.EncodeToString([]byte(value))[:16]) {
				t.Errorf("process output: %d %s", code, data)
			}
			if code, data = sessionHTTP(t, s, "", "DELETE", base, ""); code != 204 {
				t.Errorf("delete: %d %s", code, data)
			}
		})
	}
	s.stop(t)
	assertClean(t)
}
