package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The audit log: one schema on every interface, a line for every life
// event of a sandbox, with its allowlist at creation and what its network
// carried at its end.

// auditEvents are the audit lines of session id, in order, waiting up to
// 15 s (the server's sweep runs every 5 s) for one whose event is until.
func auditEvents(t *testing.T, s *server, id, until string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var out []map[string]any
		done := false
		for _, l := range s.auditLines(t) {
			if l["session"] == id {
				out = append(out, l)
				done = done || l["event"] == until
			}
		}
		if done || time.Now().After(deadline) {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// byEvent is the first line of event, or nil.
func byEvent(lines []map[string]any, event string) map[string]any {
	for _, l := range lines {
		if l["event"] == event {
			return l
		}
	}
	return nil
}

// netFigures are a line's network figures: connections, denied_total,
// bytes_in (0 for those absent).
func netFigures(l map[string]any) (conns, denied, in float64) {
	n, _ := l["network"].(map[string]any)
	conns, _ = n["connections"].(float64)
	denied, _ = n["denied_total"].(float64)
	in, _ = n["bytes_in"].(float64)
	return conns, denied, in
}

// checkCaller: a line names its caller by address and a hash, never by
// the key or the token.
func checkCaller(t *testing.T, l map[string]any, secret string) {
	t.Helper()
	c, _ := l["caller"].(string)
	if !strings.HasPrefix(c, "127.0.0.1 token:") || strings.Contains(c, secret) {
		t.Errorf("%s line's caller %q, want 127.0.0.1 token:<hash>", l["event"], c)
	}
	if _, err := time.Parse(time.RFC3339Nano, l["time"].(string)); err != nil {
		t.Errorf("%s line's time: %v", l["event"], err)
	}
}

const e2bAuditScript = `
import { Sandbox } from 'e2b'
const probe = [
	'import socket, sys',
	'host, port = sys.argv[1], int(sys.argv[2])',
	'try:',
	'    s = socket.create_connection((host, port), timeout=5); s.sendall(b"hi"); print(s.makefile("rb").read(2).decode())',
	'except OSError as e:',
	'    print("refused", type(e).__name__)',
].join('\n')
const run = async (sbx, host, port) => (await sbx.commands.run('python3 /tmp/probe.py ' + host + ' ' + port)).stdout.trim()
const sbx = await Sandbox.create({ network: { allowOut: ['web.test:7000'] } })
console.log('id', sbx.sandboxId)
await sbx.files.write('/tmp/probe.py', probe)
console.log('allowed:', await run(sbx, 'web.test', 7000))
console.log('not allowed:', await run(sbx, 'web.test', 443))
await sbx.updateNetwork({ allowOut: ['web.test:443'] })
console.log('paused', await sbx.pause())
const again = await Sandbox.connect(sbx.sandboxId)
console.log('resumed', (await again.getInfo()).state)
await again.kill()
const short = await Sandbox.create({ timeoutMs: 2000 })
console.log('short', short.sandboxId)
`

// TestAuditE2B drives an E2B sandbox's whole life with E2B's SDK and
// finds a line for each event: created with its allowlist, its list
// changed (the new one), paused, resumed, killed with its network figures
// (a refused connection counted), and a sandbox ended at its timeout.
func TestAuditE2B(t *testing.T) {
	internet(t)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt, "--allow-host", "web.test:443,7000")
			out := e.node(t, e.keys[0], e2bAuditScript)
			var id, short string
			for _, l := range lines(out) {
				if v, ok := strings.CutPrefix(l, "id "); ok {
					id = v
				}
				if v, ok := strings.CutPrefix(l, "short "); ok {
					short = v
				}
			}
			for _, want := range []string{"allowed: hi", "not allowed: refused", "resumed running"} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in\n%s", want, out)
				}
			}
			got := auditEvents(t, e.server, id, "session_ended")
			var events []string
			for _, l := range got {
				events = append(events, l["event"].(string))
				if l["interface"] != "e2b" {
					t.Errorf("%s line's interface %v, want e2b", l["event"], l["interface"])
				}
				checkCaller(t, l, e.keys[0])
			}
			if want := "session_created session_allow session_paused session_resumed session_ended"; strings.Join(events, " ") != want {
				t.Errorf("events %v, want %s", events, want)
			}
			if l := byEvent(got, "session_created"); l == nil || l["http_status"] != 201.0 || !equalList(l["allow_hosts"], "web.test:7000") || l["net_bytes"] == nil || l["lang"] != "python" {
				t.Errorf("created: %v", l)
			}
			if l := byEvent(got, "session_allow"); l == nil || !equalList(l["allow_hosts"], "web.test:443") {
				t.Errorf("network changed: %v", l)
			}
			l := byEvent(got, "session_ended")
			if l == nil || l["reason"] != "removed" || l["http_status"] != 204.0 {
				t.Fatalf("killed: %v", l)
			}
			if conns, denied, in := netFigures(l); conns != 1 || denied < 1 || in < 2 {
				t.Errorf("killed: network %v, want 1 connection, a denial, 2 bytes in", l["network"])
			}
			// Its timeout: the server ends it, and says why.
			end := byEvent(auditEvents(t, e.server, short, "session_ended"), "session_ended")
			if end == nil || end["reason"] != "lifetime" || end["caller"] != "server" {
				t.Errorf("timed out: %v", end)
			}
			data, _ := os.ReadFile(e.audit)
			for _, secret := range e.keys {
				if strings.Contains(string(data), secret) {
					t.Error("the audit log holds an API key")
				}
			}
			e.stop(t)
			assertClean(t)
		})
	}
}

// equalList: v is a JSON list of exactly want.
func equalList(v any, want ...string) bool {
	l, _ := v.([]any)
	if len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}

// TestAuditSession: a boxer session's lines carry its allowlist and byte
// cap at its creation and, at its end, removed by its caller, by the
// server at its idle timeout or by another process (boxer session rm),
// what its network carried: a refused connection counted.
func TestAuditSession(t *testing.T) {
	internet(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	token := "token-a-0123456789abcdef"
	must(t, os.WriteFile(tokens, []byte(token+"\n"), 0o600))
	s := startServer(t, "--token-file", tokens, "--allow-host", "web.test:443,7000")
	probe := `import socket\nfor port in (7000, 443):\n    try:\n        s = socket.create_connection((\"web.test\", port), timeout=5); s.sendall(b\"hi\"); print(s.makefile(\"rb\").read(2).decode())\n    except OSError as e:\n        print(\"refused\", type(e).__name__)`
	for _, tc := range []struct {
		name, body, end, reason string
	}{
		{"removed", `{"lang":"python","allow_hosts":["web.test:7000"],"net_bytes":"1m"}`, "DELETE", "removed"},
		{"idle", `{"lang":"python","allow_hosts":["web.test:7000"],"net_bytes":"1m","idle_timeout":"2s"}`, "", "idle"},
		// Removed by another process: the server still writes its end,
		// with the figures the remover read from its keeper.
		{"elsewhere", `{"lang":"python","allow_hosts":["web.test:7000"],"net_bytes":"1m"}`, "session rm", "removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, data := sessionHTTP(t, s, token, "POST", "/v1/sessions", tc.body)
			var sess struct{ ID string }
			if code != 201 || json.Unmarshal(data, &sess) != nil {
				t.Fatalf("create: %d %s", code, data)
			}
			code, data = sessionHTTP(t, s, token, "POST", "/v1/sessions/"+sess.ID+"/runs", `{"code":"`+probe+`"}`)
			if code != 200 || !strings.Contains(string(data), `"stdout":"hi\nrefused`) {
				t.Errorf("probe: %d %s", code, data)
			}
			if tc.end == "session rm" {
				if r := boxer(t, nil, "session", "rm", sess.ID); r.code != 0 {
					t.Errorf("session rm: %+v", r)
				}
			} else if tc.end != "" {
				if code, data = sessionHTTP(t, s, token, tc.end, "/v1/sessions/"+sess.ID, ""); code != 204 {
					t.Errorf("delete: %d %s", code, data)
				}
			}
			got := auditEvents(t, s, sess.ID, "session_ended")
			l := byEvent(got, "session_created")
			if l == nil || !equalList(l["allow_hosts"], "web.test:7000") || l["net_bytes"] != float64(1<<20) || l["interface"] != "http" {
				t.Errorf("created: %v", l)
			} else {
				checkCaller(t, l, token)
			}
			l = byEvent(got, "session_ended")
			if l == nil || l["reason"] != tc.reason {
				t.Fatalf("ended: %v, want reason %s", l, tc.reason)
			}
			if conns, denied, in := netFigures(l); conns != 1 || denied != 1 || in < 2 {
				t.Errorf("ended: network %v, want 1 connection, 1 denial, 2 bytes in", l["network"])
			}
		})
	}
	s.stop(t)
	assertClean(t)
}

// TestAuditMCP: boxer mcp --audit-log writes its sessions' life in the
// same schema: created, a call, closed by the client, and one ended when
// the client went away.
func TestAuditMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(boxerBin, "--namespace", namespace, "mcp", "--warm-size", "0", "--audit-log", log)
	cmd.Env = testEnv
	c := mcp.NewClient(&mcp.Implementation{Name: "boxer-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		out, _ := res.StructuredContent.(map[string]any)
		return out
	}
	closed, _ := call("create_session", map[string]any{"lang": "python"})["id"].(string)
	left, _ := call("create_session", map[string]any{"lang": "python"})["id"].(string)
	call("run_code", map[string]any{"session_id": closed, "code": "print(1)"})
	call("close_session", map[string]any{"session_id": closed})
	// Close waits for the server to exit: its sessions end first.
	session.Close()
	events := map[string][]map[string]any{}
	data, err := os.ReadFile(log)
	must(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		id, _ := l["session"].(string)
		events[id] = append(events[id], l)
	}
	var got []string
	for _, l := range events[closed] {
		got = append(got, fmt.Sprint(l["event"], " ", l["interface"], " ", l["caller"]))
	}
	if want := []string{"session_created mcp mcp", "session_run mcp mcp", "session_ended mcp mcp"}; !slices.Equal(got, want) {
		t.Errorf("closed session's lines %q, want %q", got, want)
	}
	if end := byEvent(events[left], "session_ended"); end == nil || end["reason"] != "client_disconnected" || end["caller"] != "server" {
		t.Errorf("the session left open: %v", events[left])
	}
	assertClean(t)
}
