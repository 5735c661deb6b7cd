package integration

import (
	"strings"
	"testing"
)

// Network through E2B's options: off unless asked (unlike E2B), an
// allowlist within the operator's list, nothing beyond it.

const e2bNetScript = `
import { Sandbox } from 'e2b'
const probe = [
	'import socket, sys',
	'host, port = sys.argv[1], int(sys.argv[2])',
	'try:',
	'    s = socket.create_connection((host, port), timeout=5); s.sendall(b"hi"); print(s.makefile("rb").read(2).decode())',
	'except OSError as e:',
	'    print("refused", type(e).__name__)',
].join('\n')
const run = async (sbx, host, port) => {
	await sbx.files.write('/tmp/probe.py', probe)
	return (await sbx.commands.run('python3 /tmp/probe.py ' + host + ' ' + port)).stdout.trim()
}
const off = await Sandbox.create()
console.log('off:', await run(off, 'web.test', 7000))
const on = await Sandbox.create({ network: { allowOut: ['web.test:7000'] } })
console.log('allowed:', await run(on, 'web.test', 7000))
console.log('not allowed:', await run(on, 'web.test', 443))
try { await Sandbox.create({ network: { allowOut: ['other.test'] } }); console.log('beyond: ok') } catch (e) { console.log('beyond:', e.message) }
await off.kill()
await on.kill()
`

func TestE2BNetwork(t *testing.T) {
	internet(t)
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt, "--allow-host", "web.test:443,7000")
			out := e.node(t, e.keys[0], e2bNetScript)
			for _, want := range []string{"off: refused", "allowed: hi", "not allowed: refused", "beyond: 400: network.allowOut: "} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in\n%s", want, out)
				}
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// e2bCutScript cuts a sandbox's network with updateNetwork as E2B's SDK
// says it (allowInternetAccess false, an empty object) and gives it back
// with allowOut: a connection from inside works before each cut and fails
// after it.
const e2bCutScript = `
import { Sandbox } from 'e2b'
const probe = [
	'import socket, sys',
	'host, port = sys.argv[1], int(sys.argv[2])',
	'try:',
	'    s = socket.create_connection((host, port), timeout=5); s.sendall(b"hi"); print(s.makefile("rb").read(2).decode())',
	'except OSError as e:',
	'    print("refused", type(e).__name__)',
].join('\n')
const run = async (sbx) => {
	await sbx.files.write('/tmp/probe.py', probe)
	return (await sbx.commands.run('python3 /tmp/probe.py web.test 7000')).stdout.trim()
}
const sbx = await Sandbox.create({ network: { allowOut: ['web.test:7000'] } })
const step = async (what, box, f) => {
	try { await f(); console.log(what + ':', await run(box)) } catch (e) { console.log(what + ':', e.name, e.message) }
}
await step('before', sbx, async () => {})
await step('allowInternetAccess false', sbx, () => sbx.updateNetwork({ allowInternetAccess: false }))
await step('given back', sbx, () => sbx.updateNetwork({ allowOut: ['web.test:7000'] }))
await step('empty object', sbx, () => sbx.updateNetwork({}))
await sbx.kill()
const off = await Sandbox.create()
await step('never had network', off, () => off.updateNetwork({ allowInternetAccess: false }))
await off.kill()
`

func TestE2BNetworkCut(t *testing.T) {
	internet(t)
	e := startE2B(t, "--allow-host", "web.test:443,7000")
	out := lines(e.node(t, e.keys[0], e2bCutScript))
	want := []string{"before: hi", "allowInternetAccess false: refused ", "given back: hi", "empty object: refused ", "never had network: refused "}
	for i, w := range want {
		if i >= len(out) || !strings.HasPrefix(out[i], w) {
			t.Errorf("updateNetwork: line %d, want %q, in\n%s", i+1, w, strings.Join(out, "\n"))
		}
	}
	e.stop(t)
	assertClean(t)
}
