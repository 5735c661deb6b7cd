// The code interpreter through @e2b/code-interpreter: state across cells,
// output, results, a plot, errors, env vars, a timeout, and what is refused.
import { Sandbox } from '@e2b/code-interpreter'

const sbx = await Sandbox.create({ envs: { SANDBOX_VAR: 'from-create' } })
let ex = await sbx.runCode('x = 41')
console.log('assign', JSON.stringify(ex.text), ex.results.length, ex.error === undefined)
ex = await sbx.runCode('x + 1')
console.log('x + 1', ex.text, ex.executionCount, ex.results[0].isMainResult)
ex = await sbx.runCode("'hi'")
console.log('str', ex.text)
// IPython's shell escape, inside indented code as E2B's tests write it.
ex = await sbx.runCode('\n    import os\n    !echo "sh $PWD" && echo oops >&2\n    os.getcwd()')
console.log('bang', ex.logs.stdout.join('').trim(), ex.logs.stderr.join('').trim(), ex.text, ex.error === undefined)

const streamed = []
ex = await sbx.runCode('import sys\nprint("out", 1)\nprint("err", file=sys.stderr)\n7', { onStdout: (m) => streamed.push('stdout ' + m.line.trim()), onStderr: (m) => streamed.push('stderr ' + m.line.trim()) })
console.log('logs', ex.logs.stdout.join('').trim(), ex.logs.stderr.join('').trim(), streamed.filter((l) => !l.endsWith(' ')).sort().join(','), ex.text)

ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2]})')
console.log('dataframe', ex.results[0].formats().join(','), ex.results[0].html.includes('<table'), ex.text.split('\n')[0].trim(), JSON.stringify(ex.results[0].data))

ex = await sbx.runCode('import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(5, 3), dpi=80)\nplt.plot([1, 2, 3])\nprint("drawn")')
const png = Buffer.from(ex.results[0].png, 'base64')
console.log('plot', ex.results.length, ex.results[0].isMainResult, png.subarray(1, 4).toString(), png.readUInt32BE(16), png.readUInt32BE(20), ex.results[0].text, ex.logs.stdout.join(''))
ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1]); plt.show()\nplt.plot([2]); plt.show()\nlen(plt.get_fignums())')
console.log('show', ex.results.length, ex.results.filter((r) => r.png).length, ex.text)

ex = await sbx.runCode('def f():\n    return 1 / 0\nf()')
console.log('error', ex.error.name, ex.error.value, ex.error.traceback.includes('return 1 / 0'), ex.results.length)
ex = await sbx.runCode('x +')
console.log('syntax', ex.error.name)
ex = await sbx.runCode('x')
console.log('after errors', ex.text)

ex = await sbx.runCode('import os\n(os.environ.get("SANDBOX_VAR"), os.environ.get("CELL_VAR"))', { envs: { CELL_VAR: 'cell' } })
console.log('env', ex.text)
ex = await sbx.runCode('import os\nos.environ.get("CELL_VAR")')
console.log('env after', ex.text)

const started = Date.now()
try {
	await sbx.runCode('import time\ny = 1\ntime.sleep(60)\ny = 2', { timeoutMs: 2000 })
	console.log('timeout none')
} catch (e) {
	console.log('timeout', e.name, Date.now() - started < 10000)
}
ex = await sbx.runCode('(x, y)')
console.log('after timeout', ex.text, Date.now() - started < 20000)

try {
	await sbx.runCode('1', { language: 'r' })
	console.log('r ok')
} catch (e) {
	console.log('r', e.name, e.message)
}
await sbx.kill()
