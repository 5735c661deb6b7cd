package integration

import (
	"strings"
	"testing"
)

// onTimeout: 'pause': at its timeout a sandbox is paused, not killed; with
// autoResume the next command resumes it, its files and processes as
// they were; without, connect does.

const e2bAutoPauseScript = `
import { Sandbox } from 'e2b'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const paused = async (id) => {
	for (let i = 0; i < 100; i++) {
		if ((await Sandbox.getInfo(id)).state === 'paused') return 'paused'
		await sleep(200)
	}
	return 'still running'
}
const a = await Sandbox.create({ timeoutMs: 3000, lifecycle: { onTimeout: 'pause', autoResume: true } })
await a.files.write('/tmp/state', 'kept')
const info = await Sandbox.getInfo(a.sandboxId)
console.log('lifecycle:', info.lifecycle.onTimeout, info.lifecycle.autoResume)
console.log('after timeout:', await paused(a.sandboxId))
console.log('auto resumed:', (await a.commands.run('cat /tmp/state')).stdout, (await Sandbox.getInfo(a.sandboxId)).state)
const b = await Sandbox.create({ timeoutMs: 3000, lifecycle: { onTimeout: 'pause' } })
console.log('b after timeout:', await paused(b.sandboxId))
try { await b.commands.run('echo hi', { requestTimeoutMs: 10000 }); console.log('no resume: ran') } catch (e) { console.log('no resume:', e.name) }
const c = await Sandbox.connect(b.sandboxId)
console.log('connected:', (await c.commands.run('echo hi')).stdout.trim(), (await Sandbox.getInfo(b.sandboxId)).state)
try {
	const d = await Sandbox.create({ timeoutMs: 3000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } })
	await d.files.write('/tmp/d', 'on disk')
	console.log('files only:', await paused(d.sandboxId))
	console.log('files only back:', await (await Sandbox.connect(d.sandboxId)).files.read('/tmp/d'))
	await d.kill()
} catch (e) { console.log('files only:', e.message) }
const f = await Sandbox.create()
try { console.log('pause to disk:', await f.pause({ keepMemory: false }), (await Sandbox.getInfo(f.sandboxId)).state) } catch (e) { console.log('pause to disk:', e.message) }
await f.kill()
await a.kill()
await b.kill()
`

func TestE2BAutoPause(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := e.node(t, e.keys[0], e2bAutoPauseScript)
			// keepMemory: false is a pause to disk: gVisor's; on runc a 400
			// naming the field.
			disk := []string{"files only: paused", "files only back: on disk", "pause to disk: true paused"}
			if rt == "runc" {
				disk = []string{"files only: 400: autoPauseMemory: false (keepMemory: false) needs a pause to disk, which needs gVisor", "pause to disk: 400: memory: false (keepMemory: false) needs a pause to disk"}
			}
			for _, want := range append([]string{"lifecycle: pause true", "after timeout: paused", "auto resumed: kept running", "b after timeout: paused", "no resume: ", "connected: hi running"}, disk...) {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in\n%s", want, out)
				}
			}
			if strings.Contains(out, "no resume: ran") {
				t.Errorf("a paused sandbox without autoResume ran a command:\n%s", out)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}
