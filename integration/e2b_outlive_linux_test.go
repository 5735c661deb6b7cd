package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// An E2B sandbox outlives its server: killed (SIGKILL: no shutdown), the
// next server on the node answers for it as the first did.
const e2bOutliveFirst = `
import { Sandbox } from 'e2b'
const a = await Sandbox.create({ envs: { KEPT: 'kept-env' }, metadata: { who: 'first' }, timeoutMs: 600000 })
await a.files.write('/tmp/f', 'kept-file')
const p = await a.commands.run('sleep 600', { background: true })
const b = await Sandbox.create({ timeoutMs: 8000, lifecycle: { onTimeout: 'pause', autoResume: true } })
console.log(JSON.stringify({ a: a.sandboxId, token: a.envdAccessToken, pid: p.pid, b: b.sandboxId }))
`

const e2bOutliveNext = `
import { Sandbox } from 'e2b'
const first = JSON.parse(process.env.FIRST)
const a = await Sandbox.connect(first.a)
console.log('token kept:', a.envdAccessToken === first.token)
console.log('file:', await a.files.read('/tmp/f'))
console.log('env:', (await a.commands.run('echo $KEPT')).stdout.trim())
console.log('process kept:', (await a.commands.list()).some(p => p.pid === first.pid))
const listed = (await Sandbox.list().nextItems()).find(s => s.sandboxId === first.a)
console.log('metadata:', listed?.metadata?.who)
let state = ''
for (let i = 0; i < 60 && state !== 'paused'; i++) {
  state = (await Sandbox.getInfo(first.b)).state
  if (state !== 'paused') await new Promise(r => setTimeout(r, 500))
}
console.log('timer kept:', state)
const b = await Sandbox.connect(first.b)
console.log('resumed:', (await b.commands.run('echo up')).stdout.trim())
await a.kill()
await b.kill()
`

const e2bOutliveStranger = `
import { Sandbox } from 'e2b'
const first = JSON.parse(process.env.FIRST)
try { await Sandbox.connect(first.a); console.log('stranger: connected') } catch (e) { console.log('stranger:', e.name) }
console.log('stranger sees:', (await Sandbox.list().nextItems()).length)
`

// TestE2BOutlivesServer: E2B sandboxes made through a server that is then
// stopped by SIGTERM (an upgrade) or killed (SIGKILL) live on, and the
// next server takes them over from the node's records: the same access
// token (derived, never stored), env vars, metadata, files, a background
// process, and an auto-pause timer that still pauses at its time; another
// key still sees none of them; a server started beside the first takes
// none of them. On runc and runsc, each runtime with one
// of the signals (TestSessionOutlivesServer the other way round).
func TestE2BOutlivesServer(t *testing.T) {
	for _, c := range []struct {
		rt  string
		sig syscall.Signal
	}{{"runc", syscall.SIGTERM}, {"runsc", syscall.SIGKILL}} {
		t.Run(c.rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", c.rt)
			out := strings.TrimSpace(e.node(t, e.keys[0], e2bOutliveFirst))
			var first struct{ A, B string }
			if err := json.Unmarshal([]byte(out), &first); err != nil || first.A == "" {
				t.Fatalf("first script: %q: %v", out, err)
			}
			// A server started beside it (the same keys and state,
			// another port) neither takes its sandboxes over nor ends
			// them when it stops (SIGINT ends a server's own).
			beside := slices.Clone(e.args)
			beside[slices.Index(beside, "--e2b-listen")+1] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
			by := startServer(t, beside...)
			must(t, by.cmd.Process.Signal(syscall.SIGINT))
			_ = by.cmd.Wait()
			if strings.Contains(by.log.String(), "took over") {
				t.Errorf("a server beside the live one took its sandboxes over: %s", by.log)
			}
			stopWith(t, e.server, c.sig, 2)
			if r := boxer(t, nil, "run", "--lang", "bash", "-c", "true"); r.code != 0 {
				t.Fatalf("a run between the servers: %+v", r)
			}
			e.server = startServer(t, e.args...)
			got := e.node(t, e.keys[1], e2bOutliveStranger, "FIRST="+out)
			if !strings.Contains(e.log.String(), "took over 2 E2B sandbox(es)") {
				t.Errorf("the next server does not say it took the sandboxes over: %s", e.log)
			}
			for _, want := range []string{"stranger: SandboxNotFoundError", "stranger sees: 0"} {
				if !strings.Contains(got, want) {
					t.Errorf("another key: missing %q in\n%s", want, got)
				}
			}
			got = e.node(t, e.keys[0], e2bOutliveNext, "FIRST="+out)
			for _, want := range []string{"token kept: true", "file: kept-file", "env: kept-env", "process kept: true", "metadata: first", "timer kept: paused", "resumed: up"} {
				if !strings.Contains(got, want) {
					t.Errorf("missing %q in\n%s\nserver log:\n%s", want, got, e.log)
				}
			}
			// Killed, their records are gone.
			if recs, _ := filepath.Glob(filepath.Join(stateDir, "e2b", namespace, "*.rec")); len(recs) != 0 {
				t.Errorf("records left after the sandboxes were killed: %v", recs)
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// stopWith stops s with sig and waits for it: SIGTERM must leave its n
// sessions to the next server, and say so.
func stopWith(t *testing.T, s *server, sig syscall.Signal, n int) {
	t.Helper()
	must(t, s.cmd.Process.Signal(sig))
	err := s.cmd.Wait()
	if sig != syscall.SIGTERM {
		return
	}
	if err != nil {
		t.Errorf("server exit after SIGTERM: %v: %s", err, s.log)
	}
	if want := fmt.Sprintf("left %d session(s) running for the next server", n); !strings.Contains(s.log.String(), want) {
		t.Errorf("the server stopped by SIGTERM does not say %q: %s", want, s.log)
	}
}
