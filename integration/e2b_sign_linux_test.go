package integration

import (
	"strings"
	"testing"
)

// e2bSignedScript: a file read and written by E2B's signed URLs
// (downloadUrl, uploadUrl) with a plain fetch, without the access token;
// and what the holder of one such URL cannot do with it.
const e2bSignedScript = `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create()
const other = await Sandbox.create()
await sbx.files.write('hello.txt', 'hello world')
const get = async (url, init) => {
	const res = await fetch(url, init)
	const body = await res.text()
	return res.status + ' ' + (res.status === 200 ? body.trim() : JSON.parse(body).message)
}
const form = (s) => { const f = new FormData(); f.append('file', s); return f }
console.log('read:', await get(await sbx.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 })))
console.log('read, no expiration:', await get(await sbx.downloadUrl('hello.txt')))
console.log('expired:', await get(await sbx.downloadUrl('hello.txt', { useSignatureExpiration: -10_000 })))
console.log('write:', await get(await sbx.uploadUrl('up.txt', { useSignatureExpiration: 10_000 }), { method: 'POST', body: form('file content') }))
console.log('written:', await sbx.files.read('up.txt'))
console.log('write, expired:', await get(await sbx.uploadUrl('late.txt', { useSignatureExpiration: -100_000 }), { method: 'POST', body: form('x') }))
console.log('late.txt there:', await sbx.files.exists('late.txt'))

const url = await sbx.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 })
const edit = (key, value) => { const u = new URL(url); value === undefined ? u.searchParams.delete(key) : u.searchParams.set(key, value); return u.toString() }
console.log('another path:', await get(edit('path', 'up.txt')))
console.log('a longer life:', await get(edit('signature_expiration', String(Math.floor(Date.now() / 1000) + 1_000_000))))
console.log('as root:', await get(edit('username', 'root')))
console.log('a read URL to write:', await get(url, { method: 'POST', body: form('overwritten') }))
console.log('hello.txt:', await sbx.files.read('hello.txt'))
console.log('on another sandbox:', await get(url.replace(sbx.sandboxId, other.sandboxId)))
console.log('forged:', await get(edit('signature', 'v1_forged')))
console.log('no signature:', (await fetch(edit('signature'))).status)
console.log('another route:', (await fetch(url.replace('/files?', '/health?'))).status)
await other.kill()
await sbx.kill()
console.log('killed:', await get(url))
`

// TestE2BSignedURLs: E2B's signed file URLs, by host names over TLS as
// E2B's cloud serves them, on runc and runsc.
func TestE2BSignedURLs(t *testing.T) {
	want := `read: 200 hello world
read, no expiration: 200 hello world
expired: 401 signature is already expired
write: 200 [{"path":"/home/user/up.txt","name":"up.txt","type":"file"}]
written: file content
write, expired: 401 signature is already expired
late.txt there: false
another path: 401 invalid signature
a longer life: 401 invalid signature
as root: 401 invalid signature
a read URL to write: 401 invalid signature
hello.txt: hello world
on another sandbox: 401 invalid signature
forged: 401 invalid signature
no signature: 401
another route: 401
killed: 502 The sandbox was not found`
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e, env := startE2BDomain(t, "--runtime", rt)
			if got := strings.TrimSpace(e.node(t, e.keys[0], e2bSignedScript, env...)); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}
