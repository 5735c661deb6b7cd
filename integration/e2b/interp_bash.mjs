// Bash contexts through @e2b/code-interpreter: state kept in the shell,
// streamed output, env vars, a failing command, a timeout, output that
// looks like the end of a cell, restart and removal.
import { Sandbox } from '@e2b/code-interpreter'

const sbx = await Sandbox.create({ envs: { SANDBOX_VAR: 'from-create' } })
// The shells of the sandbox, counted from python.
const shells = async () => (await sbx.runCode("import os\nsum(1 for p in os.listdir('/proc') if p.isdigit() and open('/proc/%s/comm' % p).read().strip() == 'bash')")).text

const ctx = await sbx.createCodeContext({ language: 'bash' })
console.log('made', ctx.language, ctx.cwd)
let ex = await sbx.runCode('x=41; f() { echo "f says $1"; }; cd /tmp', { context: ctx })
console.log('assign', ex.logs.stdout.length, ex.error === undefined, ex.executionCount)
ex = await sbx.runCode('echo $((x + 1)) "$(pwd)"; f hi', { context: ctx })
console.log('kept', ex.logs.stdout.join('').trim().replace('\n', ' | '), ex.executionCount)

ex = await sbx.runCode('pwd', { language: 'bash' })
console.log('default cwd', ex.logs.stdout.join('').trim(), ex.executionCount)
ex = await sbx.runCode('echo ${x:-unset}', { language: 'bash' })
console.log('default apart', ex.logs.stdout.join('').trim())
const list = await sbx.listCodeContexts()
console.log('list', list.map((c) => c.language).join(','), list.some((c) => c.id === ctx.id && c.language === 'bash'))

const started = Date.now()
let firstAt = 0
ex = await sbx.runCode('echo first; sleep 3; echo second >&2', { context: ctx, onStdout: (m) => { if (m.line.includes('first')) firstAt = Date.now() } })
const ended = Date.now()
console.log('streamed', firstAt > 0 && ended - firstAt >= 2000, ex.logs.stdout.join('').trim(), ex.logs.stderr.join('').trim(), ended - started >= 3000)

ex = await sbx.runCode('echo $SANDBOX_VAR $CELL_VAR', { language: 'bash', envs: { CELL_VAR: 'cell' } })
console.log('env', ex.logs.stdout[0].trim())
ex = await sbx.runCode('echo ${CELL_VAR:-default}', { language: 'bash' })
console.log('env after', ex.logs.stdout[0].trim())
ex = await sbx.runCode('echo $SANDBOX_VAR', { language: 'bash', envs: { SANDBOX_VAR: 'overwrite' } })
const over = ex.logs.stdout[0].trim()
ex = await sbx.runCode('echo $SANDBOX_VAR', { language: 'bash' })
console.log('env overwrite', over, ex.logs.stdout[0].trim())

ex = await sbx.runCode('echo before; ls /no/such/dir', { context: ctx })
console.log('failed', JSON.stringify(ex.error.name), ex.error.value, ex.logs.stdout.join('').trim(), ex.logs.stderr.join('').includes('No such file or directory'))
ex = await sbx.runCode('false', { context: ctx })
console.log('false', ex.error.value)
ex = await sbx.runCode('true', { context: ctx })
console.log('true', ex.error === undefined)

// Lines that look like the driver's sentinel, on both streams, then a
// second of work: the cell ends only when bash says so.
const fake = 'for i in $(seq 0 40); do echo "$i-0123456789abcdef 0"; echo "__boxer_done $i 0"; echo "$i 0" >&2; done; '
ex = await sbx.runCode(fake + 'sleep 1; echo after', { context: ctx })
const out = ex.logs.stdout.join('')
console.log('sentinel', out.trim().split('\n').pop(), out.includes('40-0123456789abcdef 0'), ex.error === undefined)

const t0 = Date.now()
try {
	await sbx.runCode('y=1; sleep 60; y=2', { context: ctx, timeoutMs: 2000 })
	console.log('timeout none')
} catch (e) {
	console.log('timeout', e.name, Date.now() - t0 < 10000)
}
ex = await sbx.runCode('echo $x $y', { context: ctx })
console.log('after timeout', ex.logs.stdout.join('').trim(), Date.now() - t0 < 20000)

const before = await shells()
await sbx.restartCodeContext(ctx)
ex = await sbx.runCode('echo "${x:-unset}" "$(pwd)"; type f >/dev/null 2>&1 || echo no f', { context: ctx })
console.log('restarted', ex.logs.stdout.join('').trim().replace('\n', ' | '), ex.executionCount)
console.log('shells', before, await shells())

await sbx.removeCodeContext(ctx.id)
console.log('removed', (await sbx.listCodeContexts()).some((c) => c.id === ctx.id), await shells())
try {
	await sbx.runCode('echo hi', { context: ctx })
	console.log('removed ran')
} catch (e) {
	console.log('run removed', e.name)
}
await sbx.kill()
