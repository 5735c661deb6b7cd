// The code interpreter's javascript and typescript contexts through
// @e2b/code-interpreter: state across cells, the last expression's value,
// console output, a thrown error, top-level await, imports, env vars, a
// TypeScript cell with types, a timeout, and a template without node.
import { Sandbox } from '@e2b/code-interpreter'

const sbx = await Sandbox.create({ envs: { SANDBOX_VAR: 'from-create' } })
const ctx = await sbx.createCodeContext({ language: 'js' })
console.log('made', ctx.language, ctx.cwd)
let ex = await sbx.runCode('const x = 41\nfunction twice(n) { return n * 2 }', { context: ctx })
console.log('assign', ex.results.length, ex.error === undefined, ex.executionCount)
ex = await sbx.runCode('x + 1', { context: ctx })
console.log('kept', ex.text, ex.executionCount, ex.results[0].isMainResult)
ex = await sbx.runCode('twice(x)', { context: ctx })
console.log('function', ex.text)
ex = await sbx.runCode("({ a: 1, s: 'hi' })", { context: ctx })
console.log('object', ex.text)
ex = await sbx.runCode('console.log("out", 1); console.error("err"); "done"', { context: ctx })
console.log('logs', JSON.stringify(ex.logs.stdout), JSON.stringify(ex.logs.stderr), ex.text)
ex = await sbx.runCode('function f() { throw new TypeError("bad " + x) }\nf()', { context: ctx })
console.log('error', ex.error.name, ex.error.value, ex.error.traceback.split('\n')[0], ex.error.traceback.includes('cell-'))
ex = await sbx.runCode('let = =', { context: ctx })
console.log('syntax', ex.error.name)
ex = await sbx.runCode('const v = await new Promise((r) => setTimeout(() => r(x), 50))\nawait Promise.resolve("awaited " + v)', { context: ctx })
console.log('await', ex.text)
ex = await sbx.runCode("import { readFileSync } from 'fs'\nimport path from 'path'\nconsole.log(typeof readFileSync)\npath.join('a', 'b')", { context: ctx })
console.log('import', ex.logs.stdout.join('').trim(), ex.text)
ex = await sbx.runCode('typeof readFileSync + " " + process.cwd()', { context: ctx })
console.log('import kept', ex.text)

ex = await sbx.runCode('const y = 7\ny', { language: 'js' })
console.log('default', ex.text, ex.executionCount)
ex = await sbx.runCode('typeof x', { language: 'javascript' })
console.log('default apart', ex.text)
ex = await sbx.runCode('[process.env.SANDBOX_VAR, process.env.CELL_VAR]', { language: 'js', envs: { CELL_VAR: 'cell' } })
console.log('env', ex.text)
ex = await sbx.runCode("process.env.CELL_VAR || 'default'", { language: 'js' })
console.log('env after', ex.text)

ex = await sbx.runCode('const message: string = "typed"\ninterface P { n: number }\nconst p: P = { n: 3 }\nconsole.log(message)\np.n * 2', { language: 'ts' })
console.log('ts', ex.logs.stdout.join('').trim(), ex.text)
ex = await sbx.runCode('p.n as number', { language: 'typescript' })
console.log('ts kept', ex.text)
ex = await sbx.runCode('let w: = 1', { language: 'ts' })
console.log('ts syntax', ex.error.name)

const started = Date.now()
try {
	await sbx.runCode('let z = 1\nwhile (true) {}', { context: ctx, timeoutMs: 2000 })
	console.log('timeout none')
} catch (e) {
	console.log('timeout', e.name, Date.now() - started < 10000)
}
ex = await sbx.runCode('[x, z]', { context: ctx })
console.log('after timeout', ex.text, Date.now() - started < 20000)

await sbx.restartCodeContext(ctx)
ex = await sbx.runCode('typeof x', { context: ctx })
console.log('restarted', ex.text, ex.executionCount)
await sbx.removeCodeContext(ctx)
await sbx.kill()

const base = await Sandbox.create('base')
try {
	await base.createCodeContext({ language: 'javascript' })
	console.log('no node made')
} catch (e) {
	console.log('no node', e.name, e.message)
}
// The SDK shows the body only with its diagnostics: the same request.
const res = await fetch(base.getJupyterRequestUrl('/contexts'), {
	method: 'POST',
	headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': base.sandboxId, 'E2b-Sandbox-Port': '49999', 'X-Access-Token': base.envdAccessToken },
	body: JSON.stringify({ language: 'ts' }),
})
console.log('no node body', res.status, JSON.parse(await res.text()).message)
// A cell of a language with no context: the same refusal, and no context
// left listed that cannot run.
try {
	const ex = await base.runCode('1 + 1', { language: 'js' })
	console.log('no node cell ran', JSON.stringify(ex.error))
} catch (e) {
	console.log('no node cell', e.name)
}
console.log('no node listed', (await base.listCodeContexts()).map((c) => c.language).join(','))
await base.kill()

