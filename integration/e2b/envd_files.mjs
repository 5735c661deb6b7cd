// envd's files through the real SDK: write, read, list, makeDir, exists,
// getInfo, rename, remove, watchDir, and escapes refused.
import { Sandbox } from 'e2b'

async function waitFor(what, ok) {
  for (const end = Date.now() + 20000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    if (ok()) return
  }
  throw new Error('timed out waiting for ' + what)
}

const sbx = await Sandbox.connect(process.env.SANDBOX)

const w = await sbx.files.write('/home/user/dir/a.txt', 'hello file')
console.log('write', w.path, w.name, w.type)
console.log('read', await sbx.files.read('/home/user/dir/a.txt'), await sbx.files.read('dir/a.txt'))
console.log('bytes', (await sbx.files.read('/home/user/dir/a.txt', { format: 'bytes' })).length)
await sbx.files.write([{ path: '/tmp/m1.txt', data: 'one' }, { path: '/workspace/m2.txt', data: 'two' }])
console.log('multi', await sbx.files.read('/tmp/m1.txt'), await sbx.files.read('/workspace/m2.txt'))
console.log('cat', (await sbx.commands.run('cat /home/user/dir/a.txt; stat -c %U /home/user/dir/a.txt')).stdout.trim().split('\n').join(','))
console.log('makeDir', await sbx.files.makeDir('/home/user/dir/sub/deeper'), await sbx.files.makeDir('/home/user/dir/sub'))
console.log('list', (await sbx.files.list('/home/user/dir')).map((e) => e.name + ':' + e.type).join(','))
console.log('list depth 3', (await sbx.files.list('/home/user/dir', { depth: 3 })).map((e) => e.path).join(','))
console.log('exists', await sbx.files.exists('/home/user/dir/a.txt'), await sbx.files.exists('/home/user/nope'))
const info = await sbx.files.getInfo('/home/user/dir/a.txt')
console.log('info', info.name, info.type, info.size, info.owner, info.permissions, info.modifiedTime instanceof Date)
const moved = await sbx.files.rename('/home/user/dir/a.txt', '/workspace/b.txt')
console.log('rename', moved.path, await sbx.files.exists('/home/user/dir/a.txt'), await sbx.files.read('/workspace/b.txt'))
await sbx.files.remove('/workspace/b.txt')
await sbx.files.remove('/home/user/dir/sub')
console.log('removed', await sbx.files.exists('/workspace/b.txt'), await sbx.files.exists('/home/user/dir/sub/deeper'))

const events = []
const watch = await sbx.files.watchDir('/home/user/dir', (e) => events.push(e.type + ':' + e.name))
await sbx.files.write('/home/user/dir/w.txt', 'x')
await sbx.commands.run('echo more >> /home/user/dir/w.txt && rm /home/user/dir/w.txt')
await waitFor('the watch events', () => events.includes('remove:w.txt'))
await watch.stop()
console.log('watch', events.includes('create:w.txt'), events.includes('write:w.txt'), events.includes('remove:w.txt'))

await sbx.commands.run('ln -s /etc /home/user/etc-link && ln -s /etc/passwd /home/user/pw')
for (const [name, f] of [
  ['read symlink out', () => sbx.files.read('/home/user/pw')],
  ['read through a link out', () => sbx.files.read('/home/user/etc-link/passwd')],
  ['read dotdot', () => sbx.files.read('/home/user/../../etc/passwd')],
  ['read outside', () => sbx.files.read('/etc/passwd')],
  ['list through a link out', () => sbx.files.list('/home/user/etc-link')],
  ['write through a link out', () => sbx.files.write('/home/user/etc-link/x', 'x')],
  ['rename out', () => sbx.files.rename('/home/user/dir', '/etc/dir')],
  ['stat dotdot', () => sbx.files.getInfo('/tmp/../etc/shadow')],
  ['read as root', () => sbx.files.read('/home/user/pw', { user: 'root' })],
]) {
  try {
    const v = await f()
    console.log(name, 'ok', JSON.stringify(v).slice(0, 60))
  } catch (e) {
    console.log(name, e.name, e.message.includes('/workspace, /tmp and /home/user') || e.message.includes('no root') || e.message.includes('no such file'))
  }
}
console.log('link itself', (await sbx.files.getInfo('/home/user/pw')).type)
