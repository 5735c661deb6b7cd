//go:build linux

package main

// E2B's SDK against boxer's own HTTP API: the same sandbox cycle (make a
// sandbox, run `python3 -c 'print(1)'` in it, kill it) through each.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// e2bCycleScript runs the cycle N times through the e2b package of the
// repository's package-lock.json and prints each cycle's milliseconds as
// a JSON list.
const e2bCycleScript = `
import { Sandbox } from 'e2b'
const times = []
for (let i = 0; i <= Number(process.env.N); i++) {
	const t = performance.now()
	const sbx = await Sandbox.create()
	const r = await sbx.commands.run("python3 -c 'print(1)'")
	if (r.stdout.trim() !== '1') throw new Error('printed ' + JSON.stringify(r.stdout))
	await sbx.kill()
	if (i > 0) times.push(performance.now() - t)
}
console.log(JSON.stringify(times))
`

// benchE2B measures the cycle through the real E2B SDK and through
// boxer's HTTP API (POST /v1/sessions, a process followed to its end,
// DELETE), on one server with both listeners; the target is the SDK's
// p50 at most 1.3 times the HTTP API's.
func benchE2B(n int, boxerBin, address string) ([]row, error) {
	s, env, err := startE2BServer(boxerBin, address)
	if err != nil {
		return nil, err
	}
	defer s.stop()

	progress("E2B SDK cycle: %d", n)
	var ms []float64
	if err := nodeJSON("E2B SDK cycle", e2bCycleScript, append(env, "N="+fmt.Sprint(n)), &ms); err != nil {
		return nil, err
	}
	var sdk []time.Duration
	for _, m := range ms {
		sdk = append(sdk, time.Duration(m*float64(time.Millisecond)))
	}

	progress("boxer HTTP API cycle: %d", n)
	cycle := func() error {
		answer, err := httpDo("POST", s.url+"/v1/sessions", `{"lang":"python"}`)
		if err != nil {
			return err
		}
		var sess struct{ ID string }
		if err := json.Unmarshal(answer, &sess); err != nil {
			return err
		}
		base := s.url + "/v1/sessions/" + sess.ID
		answer, err = httpDo("POST", base+"/processes", `{"args":["python3","-c","print(1)"]}`)
		if err != nil {
			return err
		}
		var p struct{ ID int }
		if err := json.Unmarshal(answer, &p); err != nil {
			return err
		}
		got, err := httpDo("GET", fmt.Sprintf("%s/processes/%d/output", base, p.ID), "")
		// Output comes base64 in the stream's lines: "1\n" is MQo=.
		if err == nil && (!bytes.Contains(got, []byte(`"exit_code":0`)) || !bytes.Contains(got, []byte(`"data":"MQo="`))) {
			err = fmt.Errorf("exec: %s", got)
		}
		if err != nil {
			return err
		}
		_, err = httpDo("DELETE", base, "")
		return err
	}
	var api []time.Duration
	for i := 0; i <= n; i++ {
		t := time.Now()
		if err := cycle(); err != nil {
			return nil, err
		}
		if i > 0 {
			api = append(api, time.Since(t))
		}
	}
	return []row{
		{name: e2bSDKRow, times: sdk},
		{name: e2bAPIRow, times: api},
	}, nil
}

// startE2BServer starts a server with E2B's API beside boxer's, on a key
// of its own (and flags), and is the environment that points the SDK at it.
func startE2BServer(boxerBin, address string, flags ...string) (*server, []string, error) {
	if _, err := os.Stat(filepath.Join("node_modules", "e2b", "package.json")); err != nil {
		return nil, nil, fmt.Errorf("the E2B SDK is not installed (%v): run 'make test-deps' (npm ci)", err)
	}
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	key := "e2b_" + hex.EncodeToString(b)
	keys, err := os.CreateTemp("", "boxer-bench-e2b-")
	if err != nil {
		return nil, nil, err
	}
	// The server reads its keys at its start.
	defer os.Remove(keys.Name())
	if _, err := keys.WriteString(key + "\n"); err != nil {
		return nil, nil, err
	}
	keys.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	e2bAddr := ln.Addr().String()
	ln.Close()
	s, err := startServer(boxerBin, address, append([]string{"--warm-size", "0", "--e2b-listen", e2bAddr, "--e2b-key-file", keys.Name()}, flags...)...)
	if err != nil {
		return nil, nil, err
	}
	return s, append(os.Environ(), "E2B_API_KEY="+key, "E2B_API_URL=http://"+e2bAddr, "E2B_SANDBOX_URL=http://"+e2bAddr), nil
}

const (
	e2bSDKRow = "E2B SDK: create + commands.run `python3 -c 'print(1)'` + kill (runc)"
	e2bAPIRow = "boxer HTTP API: session + exec `python3 -c 'print(1)'` + delete (runc)"
)

// nodeJSON runs script (an ES module) with env and decodes the JSON it
// prints into out; what names it in errors.
func nodeJSON(what, script string, env []string, out any) error {
	cmd := exec.Command("node", "--input-type=module", "-e", script)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", what, err, lastLine(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("%s printed %q: %v", what, stdout.String(), err)
	}
	return nil
}
