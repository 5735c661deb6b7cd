package integration

import (
	"strings"
	"testing"
)

// pause() of a gVisor sandbox goes to disk: its sandbox's processes end
// (its memory freed) and connect() restores it, the interpreter's
// variables and a background process with it; on runc it is the freezer.

const e2bPauseScript = `
import { Sandbox } from '@e2b/code-interpreter'
const sbx = await Sandbox.create()
await sbx.runCode('x = 41')
await sbx.commands.run('sleep 600', { background: true })
await sbx.files.write('/tmp/state', 'kept')
await sbx.pause()
console.log('id', sbx.sandboxId)
console.log('state', (await Sandbox.getInfo(sbx.sandboxId)).state)
`

// e2bForkOther: another key cannot fork the sandbox.
const e2bForkOther = `
import { Sandbox } from '@e2b/code-interpreter'
try {
	await Sandbox.fork(process.env.ID, { count: 1 })
	console.log('other key: forked')
} catch (e) {
	console.log('other key:', e.name)
}
`

const e2bConnectScript = `
import { Sandbox } from '@e2b/code-interpreter'
const sbx = await Sandbox.connect(process.env.ID)
console.log('state', (await Sandbox.getInfo(sbx.sandboxId)).state)
console.log('x', (await sbx.runCode('x + 1')).text)
console.log('sleep', (await sbx.commands.list()).some((c) => (c.cmd + ' ' + c.args.join(' ')).includes('sleep 600')))
console.log('file', await sbx.files.read('/tmp/state'))
try {
	const forks = await sbx.fork({ count: 2, timeoutMs: 120000 })
	for (const [i, f] of forks.entries()) {
		if (f instanceof Error) { console.log('fork', i, f.name, f.message); continue }
		await f.runCode('y = ' + i)
		const sleeping = (await f.commands.list()).some((c) => (c.cmd + ' ' + c.args.join(' ')).includes('sleep 600'))
		console.log('fork', i, (await f.runCode('x + 1')).text, (await f.runCode('y')).text, sleeping, await f.files.read('/tmp/state'), f.sandboxId !== sbx.sandboxId)
		await f.kill()
	}
	console.log('source y', (await sbx.runCode("'y' in dir()")).text)
} catch (e) {
	console.log('fork error', e.name, e.message)
}
await sbx.kill()
`

// TestE2BPauseToDisk: on runsc, pause() checkpoints the sandbox to disk:
// no process of it is left while it is paused; connect() restores it with
// its interpreter's state (x), its background process and its files; and
// fork() makes two sandboxes of that state, each with its own variable,
// the source seeing neither; another key's fork finds no sandbox. On runc the freezer keeps its processes,
// stopped, and fork is refused (409) naming why.
func TestE2BPauseToDisk(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := e.node(t, e.keys[0], e2bPauseScript)
			var id string
			for _, l := range lines(out) {
				if v, ok := strings.CutPrefix(l, "id "); ok {
					id = v
				}
			}
			if id == "" || !strings.Contains(out, "state paused") {
				t.Fatalf("pause:\n%s\nserver log:\n%s", out, e.log)
			}
			procs := processLines(func(cmd string) bool { return strings.Contains(cmd, id) })
			if rt == "runsc" && len(procs) > 0 {
				t.Errorf("processes of the sandbox paused to disk: %v", procs)
			}
			if rt == "runc" && len(procs) == 0 {
				t.Errorf("no process of the frozen sandbox: the freezer keeps them")
			}
			if out := e.node(t, e.keys[1], e2bForkOther, "ID="+id); !strings.Contains(out, "other key: SandboxNotFoundError") {
				t.Errorf("another key's fork: %s", out)
			}
			out = e.node(t, e.keys[0], e2bConnectScript, "ID="+id)
			want := []string{"state running", "x 42", "sleep true", "file kept", "fork 0 42 0 true kept true", "fork 1 42 1 true kept true", "source y False"}
			if rt == "runc" {
				want = append(want[:4], "fork error SandboxError 409: ")
			}
			for _, want := range want {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q after connect in\n%s\nserver log:\n%s", want, out, e.log)
				}
			}
			e.stop(t)
			assertClean(t)
		})
	}
}
