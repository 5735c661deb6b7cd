// File metadata through the SDK: set on a write (multipart, raw bytes,
// several files), read back by getInfo, list and rename, dropped by a
// write without it; invalid metadata refused with nothing written; what
// the sandbox's code sets as user.e2b.* read back; boxer's own API shows it.
import { Sandbox } from 'e2b'

const sbx = await Sandbox.create()
const show = (md) => JSON.stringify(md ?? null)
const md = { author: 'mish', purpose: 'upload' }

let info = await sbx.files.write('m.txt', 'with metadata', { metadata: md })
console.log('write', show(info.metadata), show((await sbx.files.getInfo('m.txt')).metadata))
info = await sbx.files.write('raw.txt', 'raw bytes', { metadata: md, useOctetStream: true })
console.log('raw', show(info.metadata), show((await sbx.files.getInfo('raw.txt')).metadata))
const infos = await sbx.files.writeFiles([{ path: 'd/one.txt', data: '1' }, { path: 'd/two.txt', data: '2' }], { metadata: { source: 'suite' } })
console.log('writeFiles', infos.map((i) => show(i.metadata)).join(' '))
console.log('list', (await sbx.files.list('d')).map((e) => e.name + '=' + show(e.metadata)).join(' '))
console.log('rename', show((await sbx.files.rename('m.txt', 'n.txt')).metadata))
info = await sbx.files.write('n.txt', 'no metadata now')
console.log('overwrite', show(info.metadata), show((await sbx.files.getInfo('n.txt')).metadata))
console.log('none', show((await sbx.files.write('plain.txt', 'x')).metadata))

for (const bad of [{ 'bad key': 'v' }, { '': 'v' }, { good: 'bad\nvalue' }]) {
	try {
		await sbx.files.write('invalid.txt', 'x', { metadata: bad })
		console.log('invalid written')
	} catch (e) {
		console.log('invalid', e.name)
	}
}
console.log('invalid exists', await sbx.files.exists('invalid.txt'))

// Set by the sandbox's own code.
const set = await sbx.commands.run(`python3 -c "import os; os.setxattr('/home/user/plain.txt', 'user.e2b.author', b'inside'); print('set')"`).catch((e) => e.result ?? e)
console.log('xattr', (set.stdout ?? '').trim() || (set.stderr ?? '').trim().split('\n').pop(), show((await sbx.files.getInfo('plain.txt')).metadata))
// What a sandbox's own listing of it shows (getfattr is not in every image).
const got = await sbx.commands.run(`python3 -c "import os; print(os.getxattr('/home/user/raw.txt', 'user.e2b.purpose').decode())"`).catch((e) => e.result ?? e)
console.log('inside', (got.stdout ?? '').trim() || (got.stderr ?? '').trim().split('\n').pop())
console.log('id', sbx.sandboxId)
