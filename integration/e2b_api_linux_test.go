package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The control plane through the real SDK: a sandbox's life (create, info,
// list by metadata, timeout, metrics, pause, connect, kill), another key
// seeing none of it, and bad input answered as E2B's SDK expects.

const e2bLifeScript = `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create({ metadata: { team: 'a' }, timeoutMs: 120000 })
console.log('id', sbx.sandboxId)
let info = await sbx.getInfo()
console.log('info', info.templateId, info.state, info.metadata.team, info.cpuCount > 0, info.memoryMB > 0)
let found = await Sandbox.list({ query: { metadata: { team: 'a' } } }).nextItems()
console.log('list a', found.length, found[0]?.sandboxId === sbx.sandboxId)
found = await Sandbox.list({ query: { metadata: { team: 'b' } } }).nextItems()
console.log('list b', found.length)
await sbx.setTimeout(600000)
info = await sbx.getInfo()
console.log('minutes left', Math.round((info.endAt - Date.now()) / 60000))
const m = await sbx.getMetrics()
console.log('metrics', m.length, m[0].memTotal > 0, m[0].memUsed > 0)
console.log('paused', await sbx.pause())
console.log('state', (await sbx.getInfo()).state)
console.log('paused again', await Sandbox.pause(sbx.sandboxId))
const again = await Sandbox.connect(sbx.sandboxId)
console.log('state', (await again.getInfo()).state)
`

const e2bOtherKeyScript = `
import { Sandbox } from 'e2b'
const id = process.env.SANDBOX
console.log('list', (await Sandbox.list().nextItems()).length)
for (const [name, f] of [['info', () => Sandbox.getInfo(id)], ['timeout', () => Sandbox.setTimeout(id, 1000)], ['connect', () => Sandbox.connect(id)], ['pause', () => Sandbox.pause(id)]]) {
	try { await f(); console.log(name, 'ok') } catch (e) { console.log(name, e.name) }
}
console.log('kill', await Sandbox.kill(id))
`

const e2bKillScript = `
import { Sandbox } from 'e2b'
const id = process.env.SANDBOX
console.log('kill', await Sandbox.kill(id))
console.log('list', (await Sandbox.list().nextItems()).length)
try { await Sandbox.getInfo(id); console.log('info ok') } catch (e) { console.log('info', e.name) }
`

func TestE2BLife(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt)
			out := lines(e.node(t, e.keys[0], e2bLifeScript))
			id := strings.TrimPrefix(out[0], "id ")
			want := []string{
				"id " + id,
				"info base running a true true",
				"list a 1 true",
				"list b 0",
				"minutes left 10",
				"metrics 1 true true",
				"paused true",
				"state paused",
				"paused again false",
				"state running",
			}
			if strings.Join(out, "\n") != strings.Join(want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
			}
			// Another key: nothing of the first's is there.
			other := strings.Join(lines(e.node(t, e.keys[1], e2bOtherKeyScript, "SANDBOX="+id)), "\n")
			if want := "list 0\ninfo SandboxNotFoundError\ntimeout SandboxNotFoundError\nconnect SandboxNotFoundError\npause SandboxNotFoundError\nkill false"; other != want {
				t.Errorf("second key: got\n%s\nwant\n%s", other, want)
			}
			killed := strings.Join(lines(e.node(t, e.keys[0], e2bKillScript, "SANDBOX="+id)), "\n")
			if want := "kill true\nlist 0\ninfo SandboxNotFoundError"; killed != want {
				t.Errorf("kill: got\n%s\nwant\n%s", killed, want)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// e2bBadScript tries what an SDK user gets wrong, printing each error.
const e2bBadScript = `
import { Sandbox } from 'e2b'
for (const [name, f] of [
	['template', () => Sandbox.create('no-such-template')],
	['image', () => Sandbox.create('example.test/none:1')],
	['image there', async () => { const s = await Sandbox.create('boxer/bash'); console.log('template', (await s.getInfo()).templateId); await s.kill() }],
	['mcp', () => Sandbox.create({ mcp: { exa: { apiKey: 'x' } } })],
	['deny', () => Sandbox.create({ network: { denyOut: ['10.0.0.0/8'] } })],
	['unknown', () => Sandbox.getInfo('bxs-0123456789abcdef')],
	['kill unknown', async () => console.log('kill', await Sandbox.kill('bxs-0123456789abcdef'))],
]) {
	try { await f(); console.log(name, 'ok') } catch (e) { console.log(name, e.name, e.message) }
}
`

func TestE2BBadInput(t *testing.T) {
	e := startE2B(t)
	// A key of the right form that the server does not know.
	_, errOut, err := e.nodeRun(t, newE2BKey(t), `import { Sandbox } from 'e2b'; await Sandbox.create()`)
	if err == nil || !strings.Contains(errOut, "AuthenticationError") || !strings.Contains(errOut, "--e2b-key-file") {
		t.Errorf("unknown key: %v\n%s", err, errOut)
	}
	out := e.node(t, e.keys[0], e2bBadScript)
	for _, want := range []string{
		`template SandboxError 404: templateID: template "no-such-template" not found`,
		"mcp SandboxError 400: mcp: is not supported by boxer",
		`image SandboxError 400: templateID: no image "example.test/none:1" here`,
		"deny SandboxError 400: network.denyOut: is not supported by boxer",
		"template boxer/bash\nimage there ok",
		"unknown SandboxNotFoundError",
		"kill false",
		"kill unknown ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// Over plain HTTP (curl's view): an unknown field is named.
	req, _ := http.NewRequest("POST", e.api+"/v2/sandboxes", strings.NewReader(`{"templateID":"base","gpu":1}`))
	req.Header.Set("X-API-KEY", e.keys[0])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "gpu: unknown field") {
		t.Errorf("unknown field: %d %s", resp.StatusCode, body)
	}
	e.stop(t)
	assertClean(t)
}
