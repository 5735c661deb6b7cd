package integration

import (
	"strings"
	"testing"
)

// Where E2B's envd and Jupyter behave a way their own tests rely on:
// removing what is not there, a link's target as an absolute path, an
// indented cell; getHost naming this server, never E2B's cloud; a sandbox killed under a command and a cell, which
// then fail as a killed sandbox's do (E2B's TimeoutError; runCode rejects)
// rather than end as they would on their own.

const e2bParityScript = `
import { Sandbox } from '@e2b/code-interpreter'
const s = await Sandbox.create()
console.log('host:', s.getHost(8000).replace(s.sandboxId, 'ID'))
console.log('metrics now:', (await s.getMetrics()).length, 'an hour ago:', (await s.getMetrics({ start: new Date(Date.now() - 7200e3), end: new Date(Date.now() - 3600e3) })).length)
await s.files.remove('/tmp/not-there.txt')
console.log('remove missing: ok')
await s.files.write('/home/user/t.txt', 'x')
await s.commands.run('cd /home/user && ln -s t.txt l.txt && ln -s /tmp /home/user/abs')
console.log('relative link:', (await s.files.getInfo('/home/user/l.txt')).symlinkTarget)
console.log('absolute link:', (await s.files.getInfo('/home/user/abs')).symlinkTarget)
const ex = await s.runCode('\n    x = 6\n    if x:\n        print(x * 7)\n')
console.log('indented:', ex.logs.stdout.join('').trim(), ex.error ? ex.error.name : 'no error')
const bg = await s.commands.run('sleep 60', { background: true })
// Its verdict is taken at once: a rejection with no handler yet ends node.
const cell = s.runCode('import time\ntime.sleep(60)').then((r) => 'cell: resolved ' + (r.error ? r.error.name : ''), () => 'cell: rejected')
await new Promise((r) => setTimeout(r, 1500))
await s.kill()
try { await bg.wait(); console.log('wait: resolved') } catch (e) { console.log('wait:', e.name) }
console.log(await cell)
// Two made within a second list in the order they were made.
const first = await Sandbox.create({ metadata: { order: 'p' } })
const second = await Sandbox.create({ metadata: { order: 'p' } })
const listed = await (await fetch(process.env.E2B_API_URL + '/v2/sandboxes?metadata=' + encodeURIComponent('order=p') + '&order=asc', { headers: { 'X-API-KEY': process.env.E2B_API_KEY } })).json()
const ids = listed.map((b) => b.sandboxID)
console.log('order:', ids[0] === first.sandboxId && ids[1] === second.sandboxId ? 'as made' : 'wrong ' + JSON.stringify(listed.map((b) => [b.sandboxID, b.startedAt])) + ' made ' + first.sandboxId + ' ' + second.sandboxId)
await first.kill()
await second.kill()
`

func TestE2BParity(t *testing.T) {
	e := startE2B(t)
	out := e.node(t, e.keys[0], e2bParityScript)
	host := "host: 8000-ID." + strings.TrimPrefix(e.api, "http://")
	for _, want := range []string{host, "metrics now: 1 an hour ago: 0", "remove missing: ok", "relative link: /home/user/t.txt", "absolute link: /tmp", "indented: 42 no error", "wait: TimeoutError", "cell: rejected", "order: as made"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	e.stop(t)
	assertClean(t)
}
