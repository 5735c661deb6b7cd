//go:build linux

package main

// Commands through E2B's SDK in one live sandbox (issue 43): commands.run
// of `true` against the SDK's cheapest round trip, files.exists, in turns;
// then `echo $i` a hundred times from one client, and from four at once.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"
)

// e2bCommandsScript times, in one sandbox of the default template, N turns
// of files.exists and commands.run('true') after a warm-up, then ECHOES
// commands.run(`echo ${i}`) from one client, then from four clients (each
// its own Sandbox.connect) at once, and prints the milliseconds as JSON.
const e2bCommandsScript = `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create()
try {
	const exists = [], run = [], echo = []
	const check = (r, want) => { if (r.exitCode !== 0 || r.stdout !== want) throw new Error('printed ' + JSON.stringify(r.stdout) + ', exit ' + r.exitCode) }
	for (let i = 0; i <= Number(process.env.N); i++) {
		let t = performance.now()
		if (!(await sbx.files.exists('/tmp'))) throw new Error('/tmp is not there')
		const e = performance.now() - t
		t = performance.now()
		check(await sbx.commands.run('true'), '')
		if (i > 0) { exists.push(e); run.push(performance.now() - t) }
	}
	const echoes = Number(process.env.ECHOES)
	const client = async (s) => {
		for (let i = 0; i < echoes; i++) {
			const t = performance.now()
			check(await s.commands.run('echo ' + i), i + '\n')
			echo.push(performance.now() - t)
		}
	}
	let t = performance.now()
	await client(sbx)
	const one = performance.now() - t
	const clients = await Promise.all([0, 1, 2, 3].map(() => Sandbox.connect(sbx.sandboxId)))
	t = performance.now()
	await Promise.all(clients.map(client))
	const four = performance.now() - t
	console.log(JSON.stringify({ exists, run, echo: echo.slice(0, echoes), one, four }))
} finally {
	await sbx.kill()
}
`

// e2bEchoes is how many `echo $i` each client runs, as issue 43 asks.
const e2bEchoes = 100

const (
	e2bExistsRow = "E2B SDK: files.exists (runc)"
	e2bTrueRow   = "E2B SDK: commands.run('true') (runc)"
	e2bEchoRow   = "E2B SDK: commands.run(`echo $i`), 100 a client, one client and four at once (runc)"
)

// benchE2BCommands measures the script's rows on a server with E2B's API:
// the two round trips (p50 of n each), and the echoes (their p50 from one
// client, and runs per second from one client and from four).
func benchE2BCommands(n int, boxerBin, address string) ([]row, error) {
	s, env, err := startE2BServer(boxerBin, address)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	progress("E2B SDK commands: %d turns, then %d echoes from one client and from four", n, e2bEchoes)
	cmd := exec.Command("node", "--input-type=module", "-e", e2bCommandsScript)
	cmd.Env = append(env, fmt.Sprintf("N=%d", n), fmt.Sprintf("ECHOES=%d", e2bEchoes))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("E2B SDK commands: %v: %s", err, lastLine(errb.String()))
	}
	var got struct {
		Exists, Run, Echo []float64
		One, Four         float64
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		return nil, fmt.Errorf("E2B SDK commands printed %q: %v", out.String(), err)
	}
	return []row{
		{name: e2bExistsRow, times: msTimes(got.Exists)},
		{name: e2bTrueRow, times: msTimes(got.Run)},
		{name: e2bEchoRow, times: msTimes(got.Echo), rate1: e2bEchoes / (got.One / 1000), rate4: 4 * e2bEchoes / (got.Four / 1000)},
	}, nil
}

// msTimes are durations of milliseconds.
func msTimes(ms []float64) []time.Duration {
	var d []time.Duration
	for _, m := range ms {
		d = append(d, time.Duration(m*float64(time.Millisecond)))
	}
	return d
}
