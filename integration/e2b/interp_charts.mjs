// The code interpreter's chart and data results through
// @e2b/code-interpreter: a bar, a line, a scatter, a pie and a box plot of
// matplotlib give E2B's chart of each, a DataFrame its data.
import { Sandbox } from '@e2b/code-interpreter'

const sbx = await Sandbox.create()
let ex = await sbx.runCode(`
import matplotlib.pyplot as plt
plt.figure(figsize=(6, 4))
plt.bar(['A', 'B', 'C'], [10, 20, 30], label='Sold')
plt.xlabel('Authors')
plt.ylabel('Books [k]')
plt.title('Sales')
plt.show()
`)
let c = ex.results[0].chart
console.log('bar', c.type, c.title, c.x_label, c.y_label, c.x_unit, c.y_unit, JSON.stringify(c.elements), ex.results[0].png !== undefined)

ex = await sbx.runCode(`
import numpy as np
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [0, 1, 4], label='square')
ax.plot([0, 1, 2], [0, 2, 4])
ax.set_title('Lines')
ax.set_xlabel('x (s)')
ax.set_ylabel('y')
fig
`)
c = ex.results[0].chart
console.log('line', c.type, c.title, c.x_label, c.x_unit, c.y_label, c.elements.map((e) => e.label + ':' + JSON.stringify(e.points)).join(' '), c.x_scale, c.x_ticks.length === c.x_tick_labels.length)

ex = await sbx.runCode(`
plt.scatter([1, 2], [3, 4], label='pts')
plt.title('Scatter')
plt.show()
plt.pie([1, 3], labels=['one', 'three'])
plt.title('Pie')
plt.show()
plt.boxplot([[85, 90, 78, 92, 88], [95, 89, 76, 91, 84, 87]], labels=['A', 'B'], patch_artist=True)
plt.title('Box')
plt.show()
`)
const [scatter, pie, box] = ex.results.map((r) => r.chart)
console.log('scatter', scatter.type, scatter.title, JSON.stringify(scatter.elements))
console.log('pie', pie.type, pie.title, JSON.stringify(pie.elements))
console.log('box', box.type, box.title, JSON.stringify(box.elements))

ex = await sbx.runCode(`
fig, (a, b) = plt.subplots(1, 2)
a.plot([1, 2])
b.bar(['x', 'y'], [1, 2])
fig.suptitle('Both')
plt.show()
`)
c = ex.results[0].chart
console.log('superchart', c.type, c.title, c.elements.map((e) => e.type).join(','))

ex = await sbx.runCode(`
import pandas as pd
pd.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"], "f": [0.5, float("nan"), 2.0], "t": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])})
`)
console.log('data', JSON.stringify(ex.results[0].data), ex.results[0].formats().join(','))
ex = await sbx.runCode('1 + 1')
console.log('no data', ex.results[0].data === undefined, ex.results[0].chart === undefined)

// A PIL image shown, saved, or the last expression: a PNG each (E2B's
// template shows show() and save() as results); printing goes on.
ex = await sbx.runCode(`
from PIL import Image
img = Image.new('RGBA', (16, 16), (255, 0, 0, 255))
img.show()
img.save('/tmp/red.png')
print('done')
img
`)
console.log('pil', ex.results.map((r) => r.png !== undefined && Buffer.from(r.png, 'base64').subarray(1, 4).toString()).join(','), ex.logs.stdout.join(''))
await sbx.kill()
