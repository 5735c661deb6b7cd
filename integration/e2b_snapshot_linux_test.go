package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// E2B's snapshots: a running sandbox's state kept on disk (gVisor), from
// which sandboxes are made later; its key's alone, kept across a restart
// of the server, its disk freed on delete.

const e2bSnapshotMake = `
import { Sandbox } from '@e2b/code-interpreter'
const src = await Sandbox.create()
await src.runCode('x = 41')
await src.files.write('/tmp/state', 'kept')
let snap
try {
	snap = await src.createSnapshot({ name: 'mine' })
} catch (e) {
	console.log('snapshot error', e.name, e.message)
	await src.kill()
	process.exit(0)
}
console.log('snapshot', snap.snapshotId, snap.names.join(','))
try { await src.createSnapshot(); console.log('second: made') } catch (e) { console.log('second:', e.message) }
await src.runCode('x = 100')
const a = await Sandbox.create(snap.snapshotId, { timeoutMs: 120000 })
const b = await Sandbox.create(snap.snapshotId, { timeoutMs: 120000 })
await a.runCode('y = 1')
await a.files.write('/tmp/state', 'a')
console.log('a', (await a.runCode('x + 1')).text, await a.files.read('/tmp/state'))
console.log('b', (await b.runCode('x + 1')).text, (await b.runCode("'y' in dir()")).text, await b.files.read('/tmp/state'))
console.log('src', (await src.runCode('x')).text, await src.files.read('/tmp/state'))
try { await a.commands.run('exit 3') } catch (e) { console.log('a exit', e.exitCode) }
const h = { headers: { 'X-API-KEY': process.env.E2B_API_KEY } }
const logs = async (q) => (await (await fetch(process.env.E2B_API_URL + '/v2/sandboxes/' + a.sandboxId + '/logs?' + q, h)).json()).logs
console.log('warn logs', (await logs('level=warn')).map((l) => l.message + ' ' + l.fields.exit_code).join('; '))
console.log('newest log', (await logs('direction=backward&limit=1'))[0].message)
console.log('logs', (await logs('')).map((l) => l.message).join('; '))
const listed = await Sandbox.listSnapshots().nextItems()
console.log('listed', listed.some((s) => s.snapshotId === snap.snapshotId && s.names.includes('mine')))
const ofSrc = await src.listSnapshots().nextItems()
console.log('of source', ofSrc.length)
for (const s of [a, b, src]) await s.kill()
`

// e2bSnapshotOther: another key neither lists, uses nor deletes it.
const e2bSnapshotOther = `
import { Sandbox } from '@e2b/code-interpreter'
const listed = await Sandbox.listSnapshots().nextItems()
console.log('other lists', listed.filter((s) => s.snapshotId === process.env.SNAP).length)
try {
	await Sandbox.create(process.env.SNAP)
	console.log('other made one')
} catch (e) {
	console.log('other create', e.name, e.message)
}
console.log('other delete', await Sandbox.deleteSnapshot(process.env.SNAP))
`

// e2bSnapshotAfter: after a restart, it is still there; deleted, it is
// gone.
const e2bSnapshotAfter = `
import { Sandbox } from '@e2b/code-interpreter'
const listed = await Sandbox.listSnapshots().nextItems()
console.log('after restart listed', listed.some((s) => s.snapshotId === process.env.SNAP))
const c = await Sandbox.create(process.env.SNAP, { timeoutMs: 120000 })
console.log('after restart', (await c.runCode('x + 1')).text, await c.files.read('/tmp/state'))
await c.kill()
console.log('delete', await Sandbox.deleteSnapshot(process.env.SNAP))
console.log('delete again', await Sandbox.deleteSnapshot(process.env.SNAP))
try {
	await Sandbox.create(process.env.SNAP)
	console.log('made one from a deleted snapshot')
} catch (e) {
	console.log('deleted create', e.name, e.message)
}
`

// TestE2BSnapshot: on runsc a snapshot of a running sandbox makes two
// sandboxes, each with the source's variable and file as they were,
// independent of each other and of the source, which goes on; another key
// does not see, use or delete it; it survives a restart of the server;
// deleted, its disk is freed. Its sandboxes' logs say where they came
// from and a command's end with its exit code. On runc createSnapshot answers 409, saying
// why. A key keeps at most --e2b-max-snapshots.
func TestE2BSnapshot(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt, "--e2b-max-snapshots", "1")
			out := e.node(t, e.keys[0], e2bSnapshotMake)
			if rt == "runc" {
				if !strings.Contains(out, "snapshot error SandboxError 409: ") || !strings.Contains(out, "runc") {
					t.Errorf("a snapshot on runc: %s", out)
				}
				e.stop(t)
				assertClean(t)
				return
			}
			var snap string
			for _, l := range lines(out) {
				if v, ok := strings.CutPrefix(l, "snapshot "); ok {
					snap, _, _ = strings.Cut(v, " ")
				}
			}
			for _, want := range []string{"snapshot " + snap + " mine", "a 42 a", "b 42 False kept", "src 100 kept", "listed true", "of source 1",
				"second: Rate limit exceeded, please try again later - this key keeps 1 snapshot(s), the most this server allows (--e2b-max-snapshots)",
				"a exit 3", "warn logs process ended 3", "newest log process ended", "logs sandbox created; sandbox made from a snapshot; "} {
				if snap == "" || !strings.Contains(out, want) {
					t.Errorf("missing %q in\n%s\nserver log:\n%s", want, out, e.log)
				}
			}
			if snap == "" {
				t.FailNow()
			}
			kept := filepath.Join(rootDir, "kept", namespace, snap)
			if _, err := os.Stat(kept); err != nil {
				t.Errorf("the snapshot's disk: %v", err)
			}
			out = e.node(t, e.keys[1], e2bSnapshotOther, "SNAP="+snap)
			for _, want := range []string{"other lists 0", "other create SandboxError 404: templateID: snapshot \"" + snap + "\" not found", "other delete false"} {
				if !strings.Contains(out, want) {
					t.Errorf("another key: missing %q in\n%s", want, out)
				}
			}
			// Killed, as a crash: the snapshot is on disk, not the server's.
			stopWith(t, e.server, syscall.SIGKILL, 0)
			e.server = startServer(t, e.args...)
			out = e.node(t, e.keys[0], e2bSnapshotAfter, "SNAP="+snap)
			for _, want := range []string{"after restart listed true", "after restart 42 kept", "delete true", "delete again false", "deleted create SandboxError 404: templateID: snapshot \"" + snap + "\" not found"} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in\n%s\nserver log:\n%s", want, out, e.log)
				}
			}
			if _, err := os.Stat(kept); err == nil {
				t.Errorf("the deleted snapshot's disk is kept: %s", kept)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}
