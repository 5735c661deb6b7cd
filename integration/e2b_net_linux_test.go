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
