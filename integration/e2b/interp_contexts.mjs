// Code contexts through @e2b/code-interpreter: each its own state and
// working directory, restarted, removed, listed.
import { Sandbox } from '@e2b/code-interpreter'

const sbx = await Sandbox.create()
const one = await sbx.createCodeContext()
const two = await sbx.createCodeContext({ cwd: '/tmp', language: 'python' })
console.log('made', one.language, one.cwd, two.cwd, one.id !== two.id)
await sbx.runCode('a = "one"', { context: one })
await sbx.runCode('a = "default"')
let ex = await sbx.runCode('a', { context: one })
console.log('one', ex.text, ex.executionCount)
ex = await sbx.runCode('a', { context: two })
console.log('two', ex.error?.name)
ex = await sbx.runCode('a')
console.log('default', ex.text)
ex = await sbx.runCode('import os\nos.getcwd()', { context: two })
console.log('cwd two', ex.text)
ex = await sbx.runCode('import os\nos.getcwd()', { context: one })
console.log('cwd one', ex.text)
let list = await sbx.listCodeContexts()
console.log('list', list.length, list.filter((c) => c.id === one.id || c.id === two.id).length)

await sbx.restartCodeContext(one)
ex = await sbx.runCode('a', { context: one })
console.log('restarted', ex.error?.name, ex.executionCount)
ex = await sbx.runCode('a')
console.log('default kept', ex.text)

await sbx.removeCodeContext(two.id)
list = await sbx.listCodeContexts()
console.log('removed', list.length, list.some((c) => c.id === two.id))
try {
	await sbx.runCode('1', { context: two })
	console.log('removed ran')
} catch (e) {
	console.log('run removed', e.name)
}
try {
	await sbx.createCodeContext({ cwd: '/no/such/dir' })
	console.log('bad cwd ok')
} catch (e) {
	console.log('bad cwd', e.name, e.message)
}
await sbx.kill()
