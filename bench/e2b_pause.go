//go:build linux

package main

// E2B's pause to disk, connect and fork of a gVisor python-data sandbox
// holding a 100 MB DataFrame, against a cold create that makes the same
// state (issue 45).

import (
	"fmt"
	"time"
)

// The rows of benchE2BPause, by name.
const (
	e2bPauseRow   = "E2B pause() of a python-data sandbox holding a 100 MB DataFrame, to disk (runsc)"
	e2bConnectRow = "E2B Sandbox.connect() of it + its first runCode reading the DataFrame (runsc)"
	e2bForkRow    = "E2B fork() of it + the fork's first runCode reading the DataFrame (runsc)"
	e2bColdRow    = "E2B Sandbox.create() of python-data + runCode making the same DataFrame + reading it (runsc)"
)

// e2bPauseScript runs each row N times in turns and prints their
// milliseconds as a JSON object of lists. The DataFrame is 1,638,400 rows
// of 8 float64 columns: 100 MiB.
const e2bPauseScript = `
import { Sandbox } from '@e2b/code-interpreter'
const state = 'import pandas as pd, numpy as np\ndf = pd.DataFrame(np.random.rand(1638400, 8))'
const read = async (sbx) => {
	const ex = await sbx.runCode('len(df)')
	if (ex.text !== '1638400') throw new Error('read ' + JSON.stringify(ex.text) + ' ' + JSON.stringify(ex.error))
}
const res = { pause: [], connect: [], fork: [], cold: [] }
const time = async (row, f) => { const t = performance.now(); await f(); res[row].push(performance.now() - t) }
const src = await Sandbox.create('python-data', { timeoutMs: 3600000 })
await src.runCode(state)
for (let i = 0; i < Number(process.env.N); i++) {
	await time('pause', () => src.pause())
	await time('connect', async () => read(await Sandbox.connect(src.sandboxId)))
	let fork
	await time('fork', async () => {
		const forks = await src.fork({ count: 1, timeoutMs: 600000 })
		if (forks[0] instanceof Error) throw forks[0]
		fork = forks[0]
		await read(fork)
	})
	await fork.kill()
	let cold
	await time('cold', async () => {
		cold = await Sandbox.create('python-data')
		await cold.runCode(state)
		await read(cold)
	})
	await cold.kill()
}
await src.kill()
console.log(JSON.stringify(res))
`

// benchE2BPause times the rows through the real E2B SDK on a server whose
// sandboxes run on runsc.
func benchE2BPause(n int, boxerBin, address string) ([]row, error) {
	s, env, err := startE2BServer(boxerBin, address, "--runtime", "runsc")
	if err != nil {
		return nil, err
	}
	defer s.stop()
	progress("E2B pause to disk, connect, fork and cold create of a 100 MB DataFrame (runsc): %d each", n)
	var ms map[string][]float64
	if err := nodeJSON("E2B pause", e2bPauseScript, append(env, "N="+fmt.Sprint(n)), &ms); err != nil {
		return nil, err
	}
	return []row{
		{name: e2bPauseRow, times: msTimes(ms["pause"])},
		{name: e2bConnectRow, times: msTimes(ms["connect"])},
		{name: e2bForkRow, times: msTimes(ms["fork"])},
		{name: e2bColdRow, times: msTimes(ms["cold"])},
	}, nil
}

// printE2BPause prints benchE2BPause's rows and the ratios against the
// cold create.
func printE2BPause(rows []row) {
	fmt.Println("\n| E2B pause to disk and fork (runsc) | p50 ms | p90 ms |")
	fmt.Println("|---|---|---|")
	p50 := map[string]time.Duration{}
	for _, r := range rows {
		p50[r.name] = median(r.times)
		fmt.Printf("| %s | %.0f | %.0f |\n", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)))
	}
	if cold := p50[e2bColdRow]; cold > 0 {
		fmt.Printf("\nE2B connect + first call after a pause to disk / cold create making the state = %.2f; fork + first call / the same = %.2f\n",
			float64(p50[e2bConnectRow])/float64(cold), float64(p50[e2bForkRow])/float64(cold))
	}
}
