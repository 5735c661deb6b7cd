package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/miekg/dns"
)

// peersName is the test fleet's SRV name, as a headless Service's: it
// names the members' fleet listeners.
const peersName = "_fleet._tcp.peers.fleet.test."

// fleetDNS answers the SRV name with the live members, and each member's
// host name with its loopback address: what cluster DNS answers for a
// headless Service (publishNotReadyAddresses) and its pods.
type fleetDNS struct {
	addr    string
	mu      sync.Mutex
	members map[string]string // host name -> host:port
	// first are listed before the members (a lower SRV priority), in
	// their order: what a stale answer or a look-alike pod could be.
	first []fleetDNSEntry
}

type fleetDNSEntry struct{ host, addr string }

// listFirst lists host at addr before every member.
func (d *fleetDNS) listFirst(host, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.first = append(d.first, fleetDNSEntry{host, addr})
}

func startFleetDNS(t *testing.T) *fleetDNS {
	t.Helper()
	d := &fleetDNS{members: map[string]string{}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	d.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: d}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return d
}

func (d *fleetDNS) set(host, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if addr == "" {
		delete(d.members, host)
	} else {
		d.members[host] = addr
	}
}

func (d *fleetDNS) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, qq := range q.Question {
		hdr := dns.RR_Header{Name: qq.Name, Class: dns.ClassINET, Ttl: 0}
		switch {
		case qq.Qtype == dns.TypeSRV && strings.EqualFold(qq.Name, peersName):
			hdr.Rrtype = dns.TypeSRV
			srv := func(host, addr string, priority uint16) {
				_, port, _ := net.SplitHostPort(addr)
				var p uint16
				fmt.Sscan(port, &p)
				m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr, Priority: priority, Weight: 10, Port: p, Target: host + "."})
			}
			for i, e := range d.first {
				srv(e.host, e.addr, uint16(i))
			}
			for host, addr := range d.members {
				srv(host, addr, 100)
			}
		case qq.Qtype == dns.TypeA:
			addr, ok := d.members[strings.TrimSuffix(qq.Name, ".")]
			for _, e := range d.first {
				if e.host == strings.TrimSuffix(qq.Name, ".") {
					addr, ok = e.addr, true
				}
			}
			if ok {
				hdr.Rrtype = dns.TypeA
				host, _, _ := net.SplitHostPort(addr)
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.ParseIP(host)})
			}
		}
	}
	_ = w.WriteMsg(m)
}

// fleetNode is one "node" of the test fleet: a boxer serve in a containerd
// namespace of its own, on a loopback address of its own.
type fleetNode struct {
	*server
	host, addr, ns string
	// e2b is the URL of its E2B listener.
	e2b string
	// listed is its address in the peers' DNS answer: its fleet
	// listener's.
	listed string
	base   []string
}

// fleetTokens are the fleet's callers.
const (
	fleetA = "fleet-token-a-0123456789abcdef"
	fleetB = "fleet-token-b-0123456789abcdef"
	// fleetE2B is the fleet's E2B API key.
	fleetE2B = "e2b_0123456789abcdef0123456789abcdef01234567"
)

func startFleetNode(t *testing.T, d *fleetDNS, ns, ip, node string, extra ...string) *fleetNode {
	t.Helper()
	dir := t.TempDir()
	tokens, key := filepath.Join(dir, "tokens"), filepath.Join(dir, "fleet-key")
	must(t, os.WriteFile(tokens, []byte(fleetA+"\n"+fleetB+"\n"), 0o600))
	must(t, os.WriteFile(key, []byte("the test fleet's key, 32 bytes or more\n"), 0o600))
	e2bKeys := filepath.Join(dir, "e2b-keys")
	must(t, os.WriteFile(e2bKeys, []byte(fleetE2B+"\n"), 0o600))
	n := &fleetNode{host: node + ".fleet.test", addr: fmt.Sprintf("%s:%d", ip, freePort(t)), ns: ns}
	e2bAddr := fmt.Sprintf("%s:%d", ip, freePort(t))
	n.e2b = "http://" + e2bAddr
	n.listed = fmt.Sprintf("%s:%d", ip, freePort(t))
	n.base = []string{"--token-file", tokens, "--fleet-peers", peersName, "--fleet-listen", n.listed, "--fleet-dns", d.addr, "--fleet-key-file", key, "--fleet-node", node, "--warm", "", "--e2b-listen", e2bAddr, "--e2b-key-file", e2bKeys}
	n.server = startServerAt(t, ns, n.addr, append(n.base, extra...)...)
	d.set(n.host, n.listed)
	return n
}

// restart starts the node's server again, as a new pod on the same node,
// with extra flags.
func (n *fleetNode) restart(t *testing.T, extra ...string) {
	t.Helper()
	n.server = startServerAt(t, n.ns, n.addr, append(n.base, extra...)...)
}

// call is one request with token to n, its answer's code and body.
func (n *fleetNode) call(t *testing.T, token, method, path, body string) (int, string) {
	t.Helper()
	code, data := sessionHTTP(t, n.server, token, method, path, body)
	return code, string(data)
}

// setupNamespace makes the python image in containerd namespace ns (from
// the layer cache) and, at the end, checks nothing of boxer's is left there.
func setupNamespace(t *testing.T, ns string) {
	t.Helper()
	cmd := exec.Command(boxerBin, "--namespace", ns, "setup", "--lang", "python")
	cmd.Env = testEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("boxer setup in %s: %v\n%s", ns, err, out)
	}
	t.Cleanup(func() {
		ctx := namespaces.WithNamespace(context.Background(), ns)
		ctrs, err := client.Containers(ctx)
		must(t, err)
		for _, c := range ctrs {
			t.Errorf("container %s left behind in %s", c.ID(), ns)
		}
	})
}

// createOn makes a python session through n.
func createOn(t *testing.T, n *fleetNode) string {
	t.Helper()
	code, body := n.call(t, fleetA, "POST", "/v1/sessions", `{"lang":"python"}`)
	return sessionID(t, code, body)
}

func sessionID(t *testing.T, code int, body string) string {
	t.Helper()
	var s struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &s) != nil || s.ID == "" {
		t.Fatalf("create: %d %s", code, body)
	}
	return s.ID
}

func runIn(t *testing.T, n *fleetNode, id, code string) string {
	t.Helper()
	c, body := n.call(t, fleetA, "POST", "/v1/sessions/"+id+"/runs", string(mustJSON(map[string]any{"code": code})))
	var res struct {
		Stdout   string `json:"stdout"`
		Status   string `json:"status"`
		ExitCode int    `json:"exit_code"`
	}
	if c != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Status != "exited" || res.ExitCode != 0 {
		t.Fatalf("run %q in %s through %s: %d %s", code, id, n.host, c, body)
	}
	return res.Stdout
}

// auditCount is how many audit lines of n name id.
func auditCount(t *testing.T, n *fleetNode, id string) int {
	t.Helper()
	k := 0
	for _, l := range n.auditLines(t) {
		if strings.Contains(fmt.Sprint(l), id) {
			k++
		}
	}
	return k
}

// TestFleet: two servers as two nodes of a fleet, found through a test DNS
// server as a headless Service's pods are. A session made through one is
// used through the other (runs, a streamed run, files, a port) and through
// both at random; a forged or tampered ID is 404 and never forwarded; a
// forwarded request keeps its caller; a draining server sends new
// sessions to the other and still answers for its own; a node that left
// the fleet answers 410 for its sessions, one that does not answer 503.
func TestFleet(t *testing.T) {
	nsB := namespace + "-fleet" // this test run's, cleaned by TestMain
	setupNamespace(t, nsB)
	d := startFleetDNS(t)
	a := startFleetNode(t, d, namespace, "127.0.0.1", "node-a", "--drain-grace", "60s")
	b := startFleetNode(t, d, nsB, "127.0.0.2", "node-b")

	id := createOn(t, a)
	runIn(t, b, id, "x = 41")
	if got := runIn(t, b, id, "print(x + 1)"); got != "42\n" {
		t.Fatalf("the session's state through node-b: %q", got)
	}
	if auditCount(t, a, id) < 3 {
		t.Fatalf("node-a's audit log names %s %d times: the runs through node-b did not reach it", id, auditCount(t, a, id))
	}

	t.Run("stream", func(t *testing.T) {
		req := sessionRequest(fleetA, "POST", b.url+"/v1/sessions/"+id+"/runs", `{"code":"import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)"}`)
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := b.client.Do(req)
		must(t, err)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var times []time.Time
		for sc.Scan() {
			times = append(times, time.Now())
		}
		if resp.StatusCode != 200 || len(times) < 4 || times[len(times)-1].Sub(times[0]) < 500*time.Millisecond {
			t.Fatalf("streamed run through node-b: %s, %d lines over %v: not streamed as it ran", resp.Status, len(times), times[len(times)-1].Sub(times[0]))
		}
	})

	t.Run("files", func(t *testing.T) {
		blob := strings.Repeat("fleet\x00\xff", 100000)
		if c, body := b.call(t, fleetA, "PUT", "/v1/sessions/"+id+"/files/in.bin", blob); c != 204 {
			t.Fatalf("PUT through node-b: %d %s", c, body)
		}
		if c, body := a.call(t, fleetA, "GET", "/v1/sessions/"+id+"/files/in.bin", ""); c != 200 || body != blob {
			t.Fatalf("GET through node-a: %d, %d bytes", c, len(body))
		}
		if c, body := b.call(t, fleetA, "GET", "/v1/sessions/"+id+"/fs/file?path=/workspace/in.bin", ""); c != 200 || body != blob {
			t.Fatalf("GET fs/file through node-b: %d, %d bytes", c, len(body))
		}
	})

	t.Run("port", func(t *testing.T) {
		c, body := b.call(t, fleetA, "POST", "/v1/sessions/"+id+"/processes", string(mustJSON(map[string]any{"args": []string{"sh", "-c", "echo served-from-a > /tmp/index.html; cd /tmp && exec python3 -m http.server 8000"}, "tag": "web"})))
		if c != 201 {
			t.Fatalf("starting a server through node-b: %d %s", c, body)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			req := sessionRequest(fleetA, "GET", b.url+"/v1/sessions/"+id+"/ports/8000/index.html", "")
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(data) == "served-from-a\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("port 8000 through node-b: %s %s", resp.Status, data)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("random", func(t *testing.T) {
		runIn(t, a, id, "n = 0")
		for i := 0; i < 200; i++ {
			n := a
			if rand.IntN(2) == 1 {
				n = b
			}
			runIn(t, n, id, "n += 1")
		}
		if got := runIn(t, b, id, "print(n)"); got != "200\n" {
			t.Fatalf("after 200 calls through both: n = %q", got)
		}
	})

	t.Run("e2b", func(t *testing.T) {
		// E2B's SDK makes a sandbox through node-a, then reaches it
		// through node-b only: commands, files, the list, the kill.
		e := &e2bServer{server: b.server, api: b.e2b}
		out := e.node(t, fleetE2B, `
import { Sandbox } from 'e2b'
const a = { apiUrl: '`+a.e2b+`', sandboxUrl: '`+a.e2b+`' }
const b = { apiUrl: '`+b.e2b+`', sandboxUrl: '`+b.e2b+`' }
const made = await Sandbox.create(a)
const sbx = await Sandbox.connect(made.sandboxId, b)
console.log('run', (await sbx.commands.run('echo via-b; cat /proc/self/cgroup | wc -l')).stdout.split('\n')[0])
await sbx.files.write('/tmp/f.txt', 'written-through-b')
console.log('read', await made.files.read('/tmp/f.txt'))
const listed = await Sandbox.list(b).nextItems()
console.log('listed', listed.some((s) => s.sandboxId === made.sandboxId))
await Sandbox.kill(made.sandboxId, b)
console.log('running', await made.isRunning())
`)
		if want := "run via-b\nread written-through-b\nlisted true\nrunning false\n"; out != want {
			t.Fatalf("E2B's SDK across the fleet:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("runsc", func(t *testing.T) {
		c, body := a.call(t, fleetA, "POST", "/v1/sessions", `{"lang":"python","runtime":"runsc"}`)
		g := sessionID(t, c, body)
		runIn(t, b, g, "import platform; y = 7")
		if got := runIn(t, a, g, "print(y * 6)"); got != "42\n" {
			t.Fatalf("a runsc session's state across the fleet: %q", got)
		}
		if c, body := b.call(t, fleetB, "GET", "/v1/sessions/"+g+"/stats", ""); c != 404 {
			t.Errorf("another caller through node-b: %d %s, want 404", c, body)
		}
		if c, body := b.call(t, fleetA, "DELETE", "/v1/sessions/"+g, ""); c != 204 {
			t.Fatalf("removing it through node-b: %d %s", c, body)
		}
	})

	t.Run("callers", func(t *testing.T) {
		if c, body := b.call(t, fleetB, "POST", "/v1/sessions/"+id+"/runs", `{"code":"print(1)"}`); c != 404 {
			t.Errorf("another caller through node-b: %d %s, want 404", c, body)
		}
		_, mine := b.call(t, fleetA, "GET", "/v1/sessions", "")
		_, theirs := b.call(t, fleetB, "GET", "/v1/sessions", "")
		if !strings.Contains(mine, id) || strings.Contains(theirs, id) {
			t.Errorf("listing through node-b: its caller's %s, another's %s; want %s in the first only", mine, theirs, id)
		}
	})

	t.Run("forged", func(t *testing.T) {
		before := len(a.auditLines(t))
		flip := func(s string, i int) string {
			c := byte('0')
			if s[i] == '0' {
				c = '1'
			}
			return s[:i] + string(c) + s[i+1:]
		}
		for _, bad := range []string{flip(id, 5), flip(id, len(id)-15), flip(id, len(id)-1), strings.Split(id, "-")[0] + "-" + strings.Split(id, "-")[1]} {
			if c, body := b.call(t, fleetA, "GET", "/v1/sessions/"+bad+"/stats", ""); c != 404 {
				t.Errorf("tampered ID %s through node-b: %d %s, want 404", bad, c, body)
			}
		}
		if after := len(a.auditLines(t)); after != before {
			t.Errorf("node-a got %d requests for tampered IDs: they were forwarded", after-before)
		}
	})

	t.Run("drain", func(t *testing.T) {
		must(t, a.cmd.Process.Signal(syscall.SIGTERM))
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, body := a.call(t, fleetA, "GET", "/healthz", "")
			if c == 503 && strings.Contains(body, `"draining":true`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("draining node-a's /healthz: %d %s", c, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if c, body := a.call(t, fleetA, "GET", "/healthz?live=1", ""); c != 200 || !strings.Contains(body, `"draining":true`) {
			t.Errorf("draining node-a's liveness: %d %s, want 200 saying draining", c, body)
		}
		// A new session through the draining node is made on the other.
		other := createOn(t, a)
		if auditCount(t, b, other) == 0 {
			t.Errorf("session %s, asked of draining node-a, is not node-b's", other)
		}
		runIn(t, a, other, "print(1)")
		// Its own still answers, through both.
		if got := runIn(t, a, id, "print(n)"); got != "200\n" {
			t.Errorf("node-a's session while draining: %q", got)
		}
		runIn(t, b, id, "print(n)")
		if a.cmd.ProcessState != nil {
			t.Fatal("node-a exited with a session left")
		}
		if c, body := b.call(t, fleetA, "DELETE", "/v1/sessions/"+id, ""); c != 204 {
			t.Fatalf("removing node-a's session through node-b: %d %s", c, body)
		}
		// Its last session gone, the draining server exits.
		exited := make(chan error, 1)
		go func() { exited <- a.cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("node-a's exit: %v: %s", err, a.log)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("node-a did not exit after its last session ended: %s", a.log)
		}
		if c, body := b.call(t, fleetA, "DELETE", "/v1/sessions/"+other, ""); c != 204 {
			t.Errorf("removing %s: %d %s", other, c, body)
		}
	})

	t.Run("gone", func(t *testing.T) {
		// node-a's pod again, on the same node: a session on it, then the
		// node stops answering (still in DNS: 503), then leaves (410).
		// No --drain-grace: it ends its sessions as it stops.
		a.restart(t)
		held := createOn(t, a)
		runIn(t, b, held, "print(1)")
		a.stop(t)
		if c, body := b.call(t, fleetA, "GET", "/v1/sessions/"+held+"/stats", ""); c != 503 || !strings.Contains(body, "does not answer") {
			t.Errorf("session of a stopped node still in DNS: %d %s, want 503", c, body)
		}
		d.set(a.host, "")
		time.Sleep(1100 * time.Millisecond) // a forced look is at most once a second
		if c, body := b.call(t, fleetA, "GET", "/v1/sessions/"+held+"/stats", ""); c != 410 || !strings.Contains(body, "left the fleet") {
			t.Errorf("session of a node gone from the fleet: %d %s, want 410", c, body)
		}
	})
	b.stop(t)
	assertClean(t)
}
