//go:build kubecluster

package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterE2B: E2B's SDK (the npm build the repository pins) makes a
// sandbox through the runc pool's Service (deploy/kubernetes's component
// e2b, port 3000), then reaches it only through the runsc pool's, whose
// pod, on the other node, forwards each call to the one holding it:
// commands, files, the list, the kill. A key the fleet does not have is
// refused there.
func TestClusterE2B(t *testing.T) {
	keys, err := base64.StdEncoding.DecodeString(kubectl(t, "-n", "boxer", "get", "secret", "boxer-token", "-o", "jsonpath={.data.e2b-keys}"))
	if err != nil || len(keys) == 0 {
		t.Fatalf("the Secret's e2b-keys: %v %q", err, keys)
	}
	key := strings.Fields(string(keys))[0]
	svc := func(name string) string {
		return "http://" + kubectl(t, "-n", "boxer", "get", "svc", name, "-o", "jsonpath={.spec.clusterIP}") + ":3000"
	}
	a, b := svc("boxer"), svc("boxer-runsc")
	out, errOut := e2bScript(t, key, `
import { Sandbox } from 'e2b'
const a = { apiUrl: '`+a+`', sandboxUrl: '`+a+`' }
const b = { apiUrl: '`+b+`', sandboxUrl: '`+b+`' }
const made = await Sandbox.create(a)
const sbx = await Sandbox.connect(made.sandboxId, b)
console.log('run', (await sbx.commands.run('echo via-b')).stdout.trim())
await sbx.files.write('/tmp/f.txt', 'written-through-b')
console.log('read', await made.files.read('/tmp/f.txt'))
const listed = await Sandbox.list(b).nextItems()
console.log('listed', listed.some((s) => s.sandboxId === made.sandboxId))
await Sandbox.kill(made.sandboxId, b)
console.log('running', await made.isRunning())
try {
	await Sandbox.list({ ...b, apiKey: 'e2b_' + '0'.repeat(40) }).nextItems()
	console.log('stranger listed')
} catch (e) {
	console.log('stranger', e.constructor.name)
}
`)
	want := "run via-b\nread written-through-b\nlisted true\nrunning false\nstranger AuthenticationError\n"
	if out != want {
		t.Fatalf("E2B's SDK across the cluster's fleet:\n%s\nwant:\n%s\nstderr:\n%s", out, want, errOut)
	}
}

// e2bScript runs an ES module with node from the repository, where the
// pinned SDKs are (make test-deps), with E2B_API_KEY key.
func e2bScript(t *testing.T, key, script string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script)
	cmd.Dir = filepath.Join(filepath.Dir(os.Getenv("BOXER_CLUSTER")), "..", "..", "..")
	cmd.Env = append(os.Environ(), "E2B_API_KEY="+key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}
