package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// E2B's SDKs by version, side by side (package.json's npm aliases): each
// makes a sandbox with its defaults (up to 2.50, allow_internet_access:
// true on every create), runs a command, writes and reads a file,
// connects by ID (up to 2.50 through POST /sandboxes/{id}/connect, no
// /v2), lists one sandbox a page (X-Next-Token) and kills. They find the
// server by host names over TLS (E2B_DOMAIN), which every version
// speaks: E2B_SANDBOX_URL came after 2.5.

// e2bSDKs are the installed e2b modules, newest first.
var e2bSDKs = []string{"e2b", "e2b-2.50", "e2b-2.45", "e2b-2.39", "e2b-2.0"}

const e2bVersionScript = `
import { Sandbox } from 'MODULE'
const a = await Sandbox.create()
console.log('run:', (await a.commands.run('echo hi')).stdout.trim())
await a.files.write('/tmp/f', 'kept')
console.log('file:', await a.files.read('/tmp/f'))
console.log('internet:', (await Sandbox.getInfo(a.sandboxId)).allowInternetAccess ?? 'not reported')
const b = await Sandbox.connect(a.sandboxId)
console.log('connected:', (await b.commands.run('cat /tmp/f')).stdout.trim())
const c = await Sandbox.create()
const pages = Sandbox.list({ limit: 1 })
const first = await pages.nextItems()
const more = pages.hasNext
const second = await pages.nextItems()
console.log('pages:', first.length, more, second.length, pages.hasNext, first[0].sandboxId !== second[0].sandboxId)
await a.kill()
await c.kill()
`

// startE2BDomain is startE2B serving host names under sb.test over TLS
// with a test CA, and the environment a node script needs to reach it
// so: E2B_DOMAIN, the CA, and sb.test resolved to loopback in node.
func startE2BDomain(t *testing.T, flags ...string) (*e2bServer, []string) {
	t.Helper()
	dir := t.TempDir()
	ca, cert, key := testCA(t, dir, "*.sb.test")
	resolve := filepath.Join(dir, "resolve.mjs")
	must(t, os.WriteFile(resolve, []byte(resolveScript), 0o644))
	e := startE2B(t, append([]string{"--e2b-domain", "sb.test:$PORT", "--tls-cert", cert, "--tls-key", key}, flags...)...)
	port := e.api[strings.LastIndex(e.api, ":")+1:]
	return e, []string{"E2B_DOMAIN=sb.test:" + port, "TEST_DOMAIN=sb.test", "NODE_EXTRA_CA_CERTS=" + ca, "NODE_OPTIONS=--import=" + resolve}
}

func TestE2BSDKVersions(t *testing.T) {
	// No --allow-host: the SDKs' allow_internet_access: true gets the
	// default network, none, and no 400.
	e, env := startE2BDomain(t)
	for _, sdk := range e2bSDKs {
		t.Run(sdk, func(t *testing.T) {
			out := e.node(t, e.keys[0], strings.ReplaceAll(e2bVersionScript, "MODULE", sdk), env...)
			internet := "internet: false"
			if sdk == "e2b-2.0" {
				// Its getInfo has no allowInternetAccess yet.
				internet = "internet: not reported"
			}
			for _, want := range []string{"run: hi", "file: kept", internet, "connected: kept", "pages: 1 true 1 false true"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s: missing %q in\n%s", sdk, want, out)
				}
			}
		})
	}
	e.stop(t)
	assertClean(t)
}

// e2bDefaultNetScript makes a sandbox as SDKs up to 2.50 do (internet
// on, no hosts of its own) and one with internet off, and says what
// each got.
const e2bDefaultNetScript = `
import { Sandbox } from 'e2b-2.50'
const on = await Sandbox.create()
const off = await Sandbox.create({ allowInternetAccess: false })
console.log('default:', (await Sandbox.getInfo(on.sandboxId)).allowInternetAccess)
console.log('off:', (await Sandbox.getInfo(off.sandboxId)).allowInternetAccess)
await on.kill()
await off.kill()
`

func TestE2BDefaultNetwork(t *testing.T) {
	for _, c := range []struct{ flag, want string }{
		{"none", "default: false"},
		{"allowlist", "default: true"},
	} {
		t.Run(c.flag, func(t *testing.T) {
			e := startE2B(t, "--allow-host", "web.test", "--e2b-default-network", c.flag)
			out := e.node(t, e.keys[0], e2bDefaultNetScript)
			for _, want := range []string{c.want, "off: false"} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in\n%s", want, out)
				}
			}
			e.stop(t)
		})
	}
	// allowlist without a list, or another word: a one-line error, 125.
	for _, args := range [][]string{
		{"--e2b-default-network", "allowlist"},
		{"--e2b-default-network", "all", "--allow-host", "web.test"},
	} {
		r := boxer(t, nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--e2b-listen", "127.0.0.1:0", "--e2b-key-file", "/dev/null"}, args...)...)
		if r.code != 125 || !strings.Contains(r.stderr, "--e2b-default-network") {
			t.Errorf("serve %v: %d %q", args, r.code, r.stderr)
		}
	}
	assertClean(t)
}

// e2bInterpreterVersionScript runs a cell with a code interpreter SDK.
const e2bInterpreterVersionScript = `
import { Sandbox } from 'MODULE'
const s = await Sandbox.create()
const ex = await s.runCode('x = 6\nx * 7')
console.log('cell:', ex.text)
await s.kill()
`

func TestE2BInterpreterVersions(t *testing.T) {
	e, env := startE2BDomain(t)
	for _, sdk := range []string{"@e2b/code-interpreter", "e2b-code-interpreter-2.7", "e2b-code-interpreter-2.0"} {
		t.Run(strings.ReplaceAll(sdk, "/", "-"), func(t *testing.T) {
			out := e.node(t, e.keys[0], strings.ReplaceAll(e2bInterpreterVersionScript, "MODULE", sdk), env...)
			if !strings.Contains(out, "cell: 42") {
				t.Errorf("%s: %s", sdk, out)
			}
		})
	}
	e.stop(t)
	assertClean(t)
}
