// Mastra's E2B workspace provider (@mastra/e2b), unchanged, driven as
// Mastra's Workspace drives it (_start, _stop, _destroy wrap the
// provider's start, stop and destroy) with the template in TEMPLATE.
import { E2BSandbox } from '@mastra/e2b'
const s = new E2BSandbox({ template: process.env.TEMPLATE, timeout: 120000, env: { GREETING: 'hello' } })
await s._start()
const id = s.e2b.sandboxId
console.log('started', s.status, id.startsWith('bxs-'))
let r = await s.executeCommand('sh', ['-c', 'echo "$GREETING from $PWD"'])
console.log('command', r.exitCode, r.success, JSON.stringify(r.stdout))
r = await s.executeCommand('sh', ['-c', 'exit 4'])
console.log('exit', r.exitCode, r.success)
await s.writeFiles([{ path: '/home/user/note.txt', content: 'from mastra' }, { path: '/tmp/bytes.bin', content: Buffer.from([1, 2, 3]) }])
console.log('read', await s.e2b.files.read('/home/user/note.txt'), (await s.e2b.files.read('/tmp/bytes.bin', { format: 'bytes' })).length)
const p = await s.processes.spawn('read line; echo "got $line"')
await p.sendStdin('typed\n')
r = await p.wait()
console.log('process', r.exitCode, JSON.stringify(r.stdout))
const bg = await s.processes.spawn('sleep 60')
console.log('listed', (await s.processes.list()).some((q) => q.pid === bg.pid && q.command.includes('sleep 60')))
console.log('killed', await bg.kill())
console.log('port url', (await s.networking.getPortUrl(8080)) === `https://${s.e2b.getHost(8080)}`)
await s._stop()
console.log('stopped', s.status)
await s._start()
console.log('again', s.status, s.e2b.sandboxId === id, await s.e2b.files.read('/home/user/note.txt'))
await s._destroy()
console.log('destroyed', s.status)
// Its default, a template it builds itself (aptInstall of s3fs and fuse):
// boxer builds it, and its apt-get fails without network.
const d = new E2BSandbox({ timeout: 60000 })
try { await d._start(); console.log('default started') } catch (e) { console.log('default', e.name, e.message.split('\n')[0]) }
