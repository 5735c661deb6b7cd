package integration

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/fakenet"
)

// secretValue is a fresh value no file of the test world can hold by
// chance.
func secretValue(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sv-" + hex.EncodeToString(b)
}

// secretFile writes value into a file of the test's own (the file: source),
// outside every directory boxer or containerd use.
func secretFile(t *testing.T, value string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "value")
	must(t, os.WriteFile(p, []byte(value+"\n"), 0o600))
	return p
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// readSecretProgram reads the secret, reports its file's mode and owner,
// its digest (never the value), and holds the sandbox a while so that the
// test can look at the host's processes.
const readSecretProgram = `
import hashlib, os, time
st = os.stat("/run/secrets/TOKEN")
v = open("/run/secrets/TOKEN").read()
print("mode", oct(st.st_mode & 0o7777), "uid", st.st_uid, "sha", hashlib.sha256(v.encode()).hexdigest())
try:
    open("/run/secrets/TOKEN", "a")
    print("writable")
except OSError:
    print("not writable")
print("others", sorted(os.listdir("/run")), sorted(os.listdir("/run/secrets")))
time.sleep(3)
`

// TestSecretNeverLeavesMemory: a secret from a file reaches the program as
// /run/secrets/NAME (0400, its user's, read-only), and nowhere else: no
// process outside the sandbox holds it in its command line or environment
// while it runs, and afterwards no file of containerd's or boxer's, no
// result and no output holds it.
func TestSecretNeverLeavesMemory(t *testing.T) {
	value := secretValue(t)
	src := secretFile(t, value)
	canaryScan(t, value)
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--json", "--runtime", rt,
				"--secret", "TOKEN=file:"+src, "--lang", "python", "-c", readSecretProgram)
			cmd.Env = testEnv
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			must(t, cmd.Start())
			exited := waitCh(cmd)
			scans := 0
			for done := false; !done; {
				if runMountPresent(t) {
					scans++
					for _, p := range processesHolding(value) {
						t.Errorf("while the sandbox runs, %s", p)
					}
				}
				select {
				case <-exited:
					done = true
				case <-time.After(200 * time.Millisecond):
				}
			}
			if scans == 0 {
				t.Errorf("the sandbox's memory-backed /run was never seen mounted on the host")
			}
			var res result
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("bad JSON (%v): %s %s", err, out.String(), errb.String())
			}
			want := "mode 0o400 uid 65534 sha " + sha(value+"\n") + "\nnot writable\nothers ['secrets'] ['TOKEN']\n"
			if res.ExitCode != 0 || res.Stdout != want {
				t.Errorf("program: exit %d stdout %q stderr %q, want %q", res.ExitCode, res.Stdout, res.Stderr, want)
			}
			if len(res.Secrets) != 1 || res.Secrets[0] != "TOKEN" {
				t.Errorf("result secrets %v, want [TOKEN]", res.Secrets)
			}
			for what, data := range map[string]string{"result": out.String(), "stderr": errb.String()} {
				if strings.Contains(data, value) {
					t.Errorf("the value is in boxer's %s", what)
				}
			}
			assertClean(t)
		})
	}
	for _, dir := range []string{rootDir, stateDir, "/run/boxer", "/run/containerd"} {
		if hits := filesHolding(t, dir, value); len(hits) > 0 {
			t.Errorf("the value is in files under %s: %v", dir, hits)
		}
	}
}

// canaryScan proves that processesHolding sees a process of the host that
// holds value in its environment: the scan cannot pass by seeing nothing.
func canaryScan(t *testing.T, value string) {
	t.Helper()
	canary := exec.Command("sleep", "30")
	canary.Env = []string{"CANARY=" + value}
	must(t, canary.Start())
	defer func() {
		_ = canary.Process.Kill()
		_ = canary.Wait()
	}()
	// Start returns once execve has closed the child's close-on-exec
	// pipe, which is before the kernel has set up the new image's
	// environment: /proc/PID/environ reads empty for a moment. Look again
	// until it is there.
	var hits []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if hits = processesHolding(value); len(hits) == 1 {
			return
		}
	}
	t.Fatalf("the scan of /proc found %d processes holding the canary, want 1: %v", len(hits), hits)
}

// waitCh waits for cmd and closes the channel it returns when it exits.
func waitCh(cmd *exec.Cmd) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(ch)
	}()
	return ch
}

// runMountPresent reports whether a sandbox's /run (a tmpfs in its run
// directory) is mounted on the host.
func runMountPresent(t *testing.T) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], filepath.Join(stateDir, "runs")+"/") && strings.HasSuffix(fields[4], "/run") && strings.Contains(sc.Text(), " - tmpfs ") {
			return true
		}
	}
	return false
}

// processesHolding lists the processes of the host's PID namespace (the
// sandbox's own are in another) whose command line or environment holds
// value.
func processesHolding(value string) []string {
	self, _ := os.Readlink("/proc/self/ns/pid")
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		dir := filepath.Join("/proc", e.Name())
		if ns, err := os.Readlink(filepath.Join(dir, "ns", "pid")); err != nil || ns != self {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err == nil && bytes.Contains(data, []byte(value)) {
				cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
				out = append(out, "process "+e.Name()+" ("+strings.ReplaceAll(string(cmd), "\x00", " ")+") holds it in its "+f)
			}
		}
	}
	return out
}

// filesHolding lists the regular files under dir that hold value.
func filesHolding(t *testing.T, dir, value string) []string {
	t.Helper()
	var hits []string
	needle := []byte(value)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	return hits
}

// leakProgram is hostile: it prints the secret whole, split across two
// writes with a pause between, on stderr, through a file in /tmp, and from
// the variable ,env gives it.
const leakProgram = `
import os, sys, time
v = open("/run/secrets/TOKEN").read().strip()
print("whole", v, flush=True)
sys.stdout.write("split " + v[:7]); sys.stdout.flush(); time.sleep(0.3)
sys.stdout.write(v[7:] + " end\n"); sys.stdout.flush()
os.write(2, ("stderr " + v + "\n").encode())
open("/tmp/copy", "w").write(v)
print("file", open("/tmp/copy").read())
print("env", os.environ.get("TOKEN"))
print("bytes", " ".join(v[i:i+1] for i in range(4)))
`

// TestSecretMasked: what the program prints of a secret shows as
// [secret:NAME] in the result and on the terminal, split writes included;
// ",env" gives the variable too.
func TestSecretMasked(t *testing.T) {
	value := secretValue(t)
	src := secretFile(t, value)
	want := "whole [secret:TOKEN]\nsplit [secret:TOKEN] end\nfile [secret:TOKEN]\nenv [secret:TOKEN]\nbytes " + strings.Join(strings.Split(value[:4], ""), " ") + "\n"
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			res, r := runJSON(t, "--runtime", rt, "--secret", "TOKEN=file:"+src+",env", "--lang", "python", "-c", leakProgram)
			if res.ExitCode != 0 || res.Stdout != want || res.Stderr != "stderr [secret:TOKEN]\n" {
				t.Errorf("result: exit %d stdout %q stderr %q, want stdout %q", res.ExitCode, res.Stdout, res.Stderr, want)
			}
			if strings.Contains(r.stdout+r.stderr, value) {
				t.Errorf("the value is in boxer's output")
			}
			term := boxer(t, nil, "run", "--runtime", rt, "--secret", "TOKEN=file:"+src+",env", "--lang", "python", "-c", leakProgram)
			if term.code != 0 || term.stdout != want || !strings.Contains(term.stderr, "stderr [secret:TOKEN]\n") || strings.Contains(term.stdout+term.stderr, value) {
				t.Errorf("terminal: exit %d stdout %q stderr %q", term.code, term.stdout, term.stderr)
			}
		})
	}
	assertClean(t)
}

// TestSecretFromCommand: a cmd: source runs without a shell and its stdout
// is the value (trailing newline trimmed); its stderr shows only when it
// fails, and then boxer exits 125 with one line and nothing started.
func TestSecretFromCommand(t *testing.T) {
	value := secretValue(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "secret-manager")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\necho 'noise on stderr' >&2\n[ \"$1\" = get ] || { echo \"no such secret: $2\" >&2; exit 3; }\nprintf '%s\\n' \""+value+"\"\n"), 0o755))
	res, r := runJSON(t, "--secret", "TOKEN=cmd:"+script+" get 'db password'", "--lang", "python", "-c",
		`import hashlib; print(hashlib.sha256(open("/run/secrets/TOKEN","rb").read()).hexdigest())`)
	if res.ExitCode != 0 || res.Stdout != sha(value)+"\n" {
		t.Errorf("cmd: source: exit %d stdout %q stderr %q %q", res.ExitCode, res.Stdout, res.Stderr, r.stderr)
	}
	if strings.Contains(r.stderr, "noise") {
		t.Errorf("a command that worked had its stderr shown: %q", r.stderr)
	}
	r = boxer(t, nil, "run", "--secret", "TOKEN=cmd:"+script+" put x", "--lang", "python", "-c", "print(1)")
	if r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "no such secret: x") || !strings.Contains(r.stderr, "exit status 3") {
		t.Errorf("failing command: exit %d stderr %q, want 125 and one line with its reason", r.code, r.stderr)
	}
	assertClean(t)
}

// TestSecretBadInput: each mistake is one line, exit 125, nothing made; a
// value is never echoed back.
func TestSecretBadInput(t *testing.T) {
	n := internet(t)
	value := secretValue(t)
	src := secretFile(t, value)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"value on the command line", nil, []string{"--secret", "TOKEN=" + value}, "--secret"},
		{"bad name", nil, []string{"--secret", "9TOKEN=file:" + src}, "--secret"},
		{"missing variable", nil, []string{"--secret", "BOXER_TEST_NOT_SET"}, "BOXER_TEST_NOT_SET"},
		{"missing file", nil, []string{"--secret", "TOKEN=file:/nonexistent/value"}, "/nonexistent/value"},
		{"inject without its secret", nil, []string{"--allow-host", fakenet.WebName, "--inject", fakenet.WebName + ":Authorization=Bearer {{secret:TOKEN}}"}, "--secret TOKEN"},
		{"inject to a host not allowed", nil, []string{"--secret", "TOKEN=file:" + src, "--inject", fakenet.WebName + ":Authorization=Bearer {{secret:TOKEN}}"}, "--allow-host " + fakenet.WebName},
		{"inject a hop header", nil, []string{"--secret", "TOKEN=file:" + src, "--allow-host", fakenet.WebName, "--inject", fakenet.WebName + ":Connection={{secret:TOKEN}}"}, "--inject"},
		{"an injected secret as a variable", nil, []string{"--secret", "TOKEN=file:" + src + ",env", "--allow-host", fakenet.WebName, "--inject", fakenet.WebName + ":Authorization=Bearer {{secret:TOKEN}}"}, "never enters the sandbox"},
	} {
		r := boxer(t, append(egressEnv(n), tc.env...), append(append([]string{"run"}, tc.args...), "--lang", "python", "-c", "print(1)")...)
		if r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, value) {
			t.Errorf("%s: exit %d stderr %q, want 125 and one line naming %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
	assertClean(t)
}

// injectProgram calls web.test's header echo twice without a credential
// (through HTTPS_PROXY, and on a raw TLS socket that ignores it) and a host
// without a rule, printing what it saw: the echo leaves Authorization out,
// so that a value could only reach the output through boxer.
const injectProgram = `
import json, os, socket, ssl, urllib.request
req = urllib.request.Request("https://web.test/headers", headers={"Authorization": "Bearer placeholder"})
seen = json.loads(urllib.request.urlopen(req, timeout=10).read())
print("proxied", seen.get("_host"), "authorization" in {k.lower() for k in seen})
ctx = ssl.create_default_context()
s = ctx.wrap_socket(socket.create_connection(("web.test", 443), timeout=10), server_hostname="web.test")
print("raw issuer", dict(x[0] for x in s.getpeercert()["issuer"]).get("commonName"))
s.sendall(b"GET /headers HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print("raw", data.split(b"\r\n", 1)[0].decode())
p = ctx.wrap_socket(socket.create_connection(("pypi.test", 443), timeout=10), server_hostname="pypi.test")
print("pass-through issuer", dict(x[0] for x in p.getpeercert()["issuer"]).get("commonName"))
print("secrets dir", os.path.exists("/run/secrets"))
try:
    urllib.request.urlopen("https://badcert.test/", timeout=10)
except urllib.error.HTTPError as e:
    print("badcert", e.code, e.read().decode().strip())
`

// TestSecretInjected: the proxy sets the header from a secret the sandbox
// never holds, on HTTPS requests to the rule's host only (TLS terminated
// with the run's CA); another host is passed through with its own
// certificate; an upstream certificate boxer does not trust is a 502 with
// its reason in the result.
func TestSecretInjected(t *testing.T) {
	n := internet(t)
	value := secretValue(t)
	src := secretFile(t, value)
	env := append(egressEnv(n), "SSL_CERT_FILE="+n.CAFile)
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			before := len(n.Received("/headers"))
			r := boxer(t, env, "run", "--json", "--runtime", rt,
				"--allow-host", fakenet.WebName, "--allow-host", fakenet.PyPIName, "--allow-host", fakenet.BadCertName,
				"--secret", "API_KEY=file:"+src,
				"--inject", fakenet.WebName+":Authorization=Bearer {{secret:API_KEY}}",
				"--inject", fakenet.BadCertName+":X-Api-Key={{secret:API_KEY}}",
				"--lang", "python", "-c", injectProgram)
			var res result
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("bad JSON (%v): %q %q", err, r.stdout, r.stderr)
			}
			lines := strings.Split(res.Stdout, "\n")
			wantPrefixes := []string{"proxied web.test False", "raw issuer boxer per-run CA", "raw HTTP/1.1 200 OK", "pass-through issuer boxer fakenet test CA", "secrets dir False", "badcert 502 boxer: badcert.test:443 upstream certificate not trusted"}
			if res.ExitCode != 0 || len(lines) < len(wantPrefixes) {
				t.Fatalf("program: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			for i, w := range wantPrefixes {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d: %q, want it to start with %q", i, lines[i], w)
				}
			}
			got := n.Received("/headers")[before:]
			if len(got) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(got))
			}
			for _, h := range got {
				if a := h.Values("Authorization"); len(a) != 1 || a[0] != "Bearer "+value {
					t.Errorf("upstream got Authorization %d values, want exactly the injected one", len(a))
				}
			}
			if res.Network == nil || res.Network.Intercepted != 2 {
				t.Errorf("network report %+v, want 2 intercepted", res.Network)
			}
			bad := false
			for _, d := range res.Network.Denied {
				bad = bad || d.Status == 502 && strings.Contains(d.Reason, "upstream certificate not trusted")
			}
			if !bad {
				t.Errorf("no 502 denial for badcert.test: %+v", res.Network.Denied)
			}
			if len(res.Injected) != 2 || res.Injected[0].Host != fakenet.WebName || res.Injected[0].Header != "Authorization" || len(res.Secrets) != 0 {
				t.Errorf("result injected %v secrets %v", res.Injected, res.Secrets)
			}
			if strings.Contains(r.stdout+r.stderr, value) {
				t.Errorf("the value is in boxer's output")
			}
		})
	}
	assertClean(t)
}

// TestServeSecrets: serve holds secrets from --secrets-dir and --secret; a
// request names them and never carries a value; the audit log names them
// and the injection rules, never a value.
func TestServeSecrets(t *testing.T) {
	internet(t)
	value, other := secretValue(t), secretValue(t)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "DB_PASSWORD"), []byte(value), 0o600))
	src := secretFile(t, other)
	s := startServer(t, "--secrets-dir", dir, "--secret", "API_KEY=file:"+src, "--allow-host", fakenet.WebName,
		"--inject", fakenet.WebName+":Authorization=Bearer {{secret:API_KEY}}")
	code, _, body := s.post(t, `{"lang":"python","code":"import os\nprint(open('/run/secrets/DB_PASSWORD').read() == os.environ['DB_PASSWORD'], os.path.exists('/run/secrets/API_KEY'))","secrets":["DB_PASSWORD,env","API_KEY"],"allow_hosts":["web.test"]}`)
	var res result
	if err := json.Unmarshal(body, &res); err != nil || code != 200 || res.Stdout != "True False\n" {
		t.Errorf("named secrets: %d %s", code, body)
	}
	code, _, body = s.post(t, `{"lang":"python","code":"print(1)","secrets":["NOPE"]}`)
	if code != 400 || !strings.Contains(string(body), `"field":"secrets"`) || !strings.Contains(string(body), "NOPE") {
		t.Errorf("unknown secret: %d %s, want 400 naming it", code, body)
	}
	code, _, body = s.post(t, `{"lang":"python","code":"print(1)","secrets":["API_KEY,env"],"allow_hosts":["web.test"]}`)
	if code != 400 || !strings.Contains(string(body), "never enters the sandbox") {
		t.Errorf("an injected secret as a variable: %d %s, want 400", code, body)
	}
	s.stop(t)
	audit, err := os.ReadFile(s.audit)
	must(t, err)
	if !strings.Contains(string(audit), `"secrets":["DB_PASSWORD,env","API_KEY"]`) || !strings.Contains(string(audit), `"injected":[{"host":"web.test","header":"Authorization"}]`) {
		t.Errorf("audit log does not name the secrets and the rule:\n%s", audit)
	}
	for what, data := range map[string]string{"audit log": string(audit), "server log": s.log.String()} {
		if strings.Contains(data, value) || strings.Contains(data, other) {
			t.Errorf("a value is in the %s", what)
		}
	}
	assertClean(t)
}
