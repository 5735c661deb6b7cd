// envd's process service through the real SDK: a run, its exit code,
// streaming, stdin, a background command killed, connect, a PTY, root.
import { Sandbox } from 'e2b'

const enc = (s) => new TextEncoder().encode(s)
async function waitFor(what, ok) {
  for (const end = Date.now() + 20000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    if (ok()) return
  }
  throw new Error('timed out waiting for ' + what)
}

const sbx = await Sandbox.create()
console.log('id', sbx.sandboxId)

const r = await sbx.commands.run('echo hi; echo oops >&2; pwd; echo $FOO', { envs: { FOO: 'bar' } })
console.log('run', JSON.stringify(r.stdout), JSON.stringify(r.stderr), r.exitCode)
try {
  await sbx.commands.run('exit 3')
} catch (e) {
  console.log('exit', e.name, e.exitCode, e.error)
}
console.log('cwd', (await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout.trim())
// What E2B's base template has and commands call.
console.log('tools', (await sbx.commands.run('python -c "print(2 + 2)" && curl --version | head -c 5')).stdout.trim().replace('\n', ' '))

const chunks = []
await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.3; done', { onStdout: (d) => chunks.push(d) })
console.log('streamed', chunks.join('').trim().split('\n').join(','), chunks.length >= 2)

const head = await sbx.commands.run('head -n 1', { background: true, stdin: true })
await sbx.commands.sendStdin(head.pid, 'from stdin\nnot read\n')
console.log('stdin', JSON.stringify((await head.wait()).stdout))
const cat = await sbx.commands.run('wc -c', { background: true, stdin: true })
await sbx.commands.sendStdin(cat.pid, 'four')
await sbx.commands.closeStdin(cat.pid)
console.log('closed stdin', (await cat.wait()).stdout.trim())

const bg = await sbx.commands.run('sleep 300', { background: true })
let listed = (await sbx.commands.list()).find((p) => p.pid === bg.pid)
console.log('listed', listed?.cmd, listed?.args.join(' '), listed?.cwd)
console.log('kill', await bg.kill())
try {
  await bg.wait()
} catch (e) {
  console.log('killed', e.name, e.exitCode)
}
listed = (await sbx.commands.list()).find((p) => p.pid === bg.pid)
console.log('listed after kill', listed !== undefined)
console.log('kill again', await sbx.commands.kill(bg.pid))

const ticks = await sbx.commands.run('for i in 1 2 3 4 5; do echo tick$i; sleep 0.3; done', { background: true })
await ticks.disconnect()
const seen = []
const again = await sbx.commands.connect(ticks.pid, { onStdout: (d) => seen.push(d) })
const done = await again.wait()
console.log('connect', again.pid === ticks.pid, done.stdout.trim().split('\n').join(','), seen.join('') === done.stdout)

let screen = ''
const dec = new TextDecoder()
const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += dec.decode(d, { stream: true }) } })
await sbx.pty.sendInput(pty.pid, enc('echo typed-$((6*7))\n'))
await waitFor('the typed command', () => screen.includes('typed-42'))
await sbx.pty.sendInput(pty.pid, enc('stty size\n'))
await waitFor('the first size', () => screen.includes('24 80'))
await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 })
await sbx.pty.sendInput(pty.pid, enc('stty size\n'))
await waitFor('the new size', () => screen.includes('30 100'))
await sbx.pty.sendInput(pty.pid, enc('exit 5\n'))
try {
  await pty.wait()
} catch (e) {
  console.log('pty', e.exitCode)
}

try {
  await sbx.commands.run('id', { user: 'root' })
  console.log('root ran')
} catch (e) {
  console.log('root', e.name, e.message.includes('boxer sandboxes have no root'))
}
