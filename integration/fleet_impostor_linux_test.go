package integration

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// relay is an impostor of the fleet: on an address of its own, for each
// target, a listener on the target's port that relays every connection to
// it, and a record of every byte it carried in either direction, as a
// pod that took a dead one's address or a stale DNS answer could.
type relay struct {
	ip   string
	mu   sync.Mutex
	seen bytes.Buffer
	// conns counts the connections it relayed.
	conns int
}

func (r *relay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.Write(p)
}

func (r *relay) captured() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.String(), r.conns
}

// listen listens on the relay's address at target's port.
func (r *relay) listen(t *testing.T, target string) net.Listener {
	t.Helper()
	_, port, _ := net.SplitHostPort(target)
	ln, err := net.Listen("tcp", net.JoinHostPort(r.ip, port))
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// tcpRelay relays raw bytes, whatever they are.
func tcpRelay(t *testing.T, ip string, targets ...string) *relay {
	r := &relay{ip: ip}
	for _, target := range targets {
		ln := r.listen(t, target)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				r.mu.Lock()
				r.conns++
				r.mu.Unlock()
				go func() {
					defer c.Close()
					up, err := net.Dial("tcp", target)
					if err != nil {
						return
					}
					defer up.Close()
					done := make(chan struct{}, 2)
					go func() { _, _ = io.Copy(io.MultiWriter(up, r), c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
					go func() { _, _ = io.Copy(io.MultiWriter(c, r), up); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
					<-done
					<-done
				}()
			}
		}()
	}
	return r
}

// recordingListener keeps every byte read from its connections.
type recordingListener struct {
	net.Listener
	r *relay
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.r.mu.Lock()
	l.r.conns++
	l.r.mu.Unlock()
	return recordingConn{c, l.r}, nil
}

type recordingConn struct {
	net.Conn
	r *relay
}

func (c recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	_, _ = c.r.Write(p[:n])
	return n, err
}

// httpRelay is an HTTP reverse proxy to each target, as plain HTTP.
func httpRelay(t *testing.T, ip string, targets ...string) *relay {
	r := &relay{ip: ip}
	for _, target := range targets {
		ln := r.listen(t, target)
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
		srv := &http.Server{Handler: proxy, ErrorLog: nil}
		go func() { _ = srv.Serve(recordingListener{ln, r}) }()
		t.Cleanup(func() { srv.Close() })
	}
	return r
}

// TestFleetImpostor: two impostors listed before the members in the
// peers' DNS answer relay every connection to node-b, one raw TCP, one
// plain HTTP, and record all they carry. Calls through node-a for what
// node-b holds (a run's code with a bearer token, on runc and runsc, the
// session list, E2B's
// control plane with an API key, envd with an access token, a call that
// names itself forwarded) are still answered by node-b, and neither
// impostor captures a token, a key or the code; the fleet listener
// refuses a client without the key; node-b's audit log names the caller
// node-a served, and node-a's has a line of each request it forwarded.
func TestFleetImpostor(t *testing.T) {
	nsB := namespace + "-fleet"
	setupNamespace(t, nsB)
	d := startFleetDNS(t)
	b := startFleetNode(t, d, nsB, "127.0.0.2", "node-b")
	bE2B := strings.TrimPrefix(b.e2b, "http://")
	raw := tcpRelay(t, "127.0.0.3", b.listed, bE2B)
	plain := httpRelay(t, "127.0.0.4", b.listed, bE2B)
	d.listFirst("impostor-raw.fleet.test", net.JoinHostPort(raw.ip, port(b.listed)))
	d.listFirst("impostor-http.fleet.test", net.JoinHostPort(plain.ip, port(b.listed)))
	a := startFleetNode(t, d, namespace, "127.0.0.1", "node-a")

	canary := "impostor_canary_" + fmt.Sprint(time.Now().UnixNano())
	id := createOn(t, b)
	if got := runIn(t, a, id, "print('"+canary+"')"); got != canary+"\n" {
		t.Fatalf("a run through node-a: %q", got)
	}
	// The same on gVisor.
	c, body := b.call(t, fleetA, "POST", "/v1/sessions", `{"lang":"python","runtime":"runsc"}`)
	g := sessionID(t, c, body)
	if got := runIn(t, a, g, "print('"+canary+"-runsc')"); got != canary+"-runsc\n" {
		t.Fatalf("a run in a runsc session through node-a: %q", got)
	}
	if c, body := a.call(t, fleetA, "DELETE", "/v1/sessions/"+g, ""); c != 204 {
		t.Fatalf("removing the runsc session through node-a: %d %s", c, body)
	}
	if _, mine := a.call(t, fleetA, "GET", "/v1/sessions", ""); !strings.Contains(mine, id) {
		t.Errorf("node-a's list does not show node-b's session %s: %s", id, mine)
	}
	// A caller's own mark of a forwarded request is no mark: the call is
	// forwarded still, not answered 404 where it landed.
	req := sessionRequest(fleetA, "GET", a.url+"/v1/sessions/"+id+"/stats", "")
	req.Header.Set("Boxer-Fleet-Forwarded", "node-a")
	if c, _, body := sessionDo(t, a.server, req); c != 200 {
		t.Errorf("a call through node-a naming itself forwarded: %d %s, want 200 from node-b", c, body)
	}
	// From another address: node-b's audit line names it, not node-a.
	from := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}}).DialContext}}
	resp, err := from.Do(sessionRequest(fleetA, "POST", a.url+"/v1/sessions/"+id+"/runs", `{"code":"print(2)"}`))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a run through node-a from 127.0.0.5: %s", resp.Status)
	}
	if !auditNames(t, b, id, "127.0.0.5") {
		t.Errorf("node-b's audit log has no line for %s from 127.0.0.5, the caller node-a served: %v", id, b.auditLines(t))
	}
	// node-a writes a line of its own: what it forwarded, for whom, to
	// which member, and the answer.
	if !forwardLine(t, a, id, "127.0.0.5", 200) {
		t.Errorf("node-a's audit log has no request_forwarded line for %s from 127.0.0.5 answered 200: %v", id, a.auditLines(t))
	}

	// E2B: a sandbox made on node-b, reached through node-a.
	sbx, envdToken := e2bCreate(t, b.e2b)
	get, _ := http.NewRequest("GET", a.e2b+"/sandboxes/"+sbx, nil)
	get.Header.Set("X-API-KEY", fleetE2B)
	if c, body := e2bDo(t, get); c != 200 || !strings.Contains(body, sbx) {
		t.Errorf("GET /sandboxes/%s through node-a: %d %s", sbx, c, body)
	}
	stat, _ := http.NewRequest("POST", a.e2b+"/filesystem.Filesystem/Stat", strings.NewReader(`{"path":"/tmp"}`))
	stat.Header.Set("Content-Type", "application/json")
	stat.Header.Set("E2b-Sandbox-Id", sbx)
	stat.Header.Set("E2b-Sandbox-Port", "49983")
	stat.Header.Set("X-Access-Token", envdToken)
	if c, body := e2bDo(t, stat); c != 200 || !strings.Contains(body, `"name":"tmp"`) {
		t.Errorf("envd's Stat through node-a: %d %s", c, body)
	}
	kill, _ := http.NewRequest("DELETE", a.e2b+"/sandboxes/"+sbx, nil)
	kill.Header.Set("X-API-KEY", fleetE2B)
	if c, body := e2bDo(t, kill); c != 204 {
		t.Errorf("DELETE /sandboxes/%s through node-a: %d %s", sbx, c, body)
	}
	if !forwardLine(t, a, sbx, "127.0.0.1", 204) {
		t.Errorf("node-a's audit log has no request_forwarded line for the kill of %s: %v", sbx, a.auditLines(t))
	}

	for _, imp := range []struct {
		name string
		r    *relay
	}{{"the raw TCP relay", raw}, {"the plain HTTP relay", plain}} {
		seen, conns := imp.r.captured()
		t.Logf("%s: %d connections, %d bytes", imp.name, conns, len(seen))
		for _, secret := range []struct{ what, v string }{
			{"the bearer token", fleetA}, {"the E2B API key", fleetE2B}, {"the envd access token", envdToken}, {"the run's code", canary},
		} {
			if strings.Contains(seen, secret.v) {
				t.Errorf("%s captured %s in clear", imp.name, secret.what)
			}
		}
	}
	// The raw relay, first in DNS, was believed as node-b (it carries
	// node-b's own handshake) and carried the calls, as ciphertext.
	if _, conns := raw.captured(); conns == 0 {
		t.Error("the raw TCP relay carried no connection: the test tried nothing")
	}

	t.Run("refused", func(t *testing.T) {
		fleetAddr := b.listed
		// Plain HTTP, as the old probe was asked.
		if resp, err := http.Get("http://" + fleetAddr + "/v1/fleet/node?nonce=" + strings.Repeat("0", 32)); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				t.Errorf("plain HTTP to node-b's fleet address: %s %s", resp.Status, body)
			}
		}
		// TLS without a certificate, and with one of another key.
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, other.Public(), other)
		must(t, err)
		for _, tc := range []struct {
			name  string
			certs []tls.Certificate
		}{{"no certificate", nil}, {"another key's certificate", []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: other}}}} {
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: tc.certs}}
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + fleetAddr + "/v1/fleet/node")
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Errorf("%s: node-b's fleet listener answered %s %s", tc.name, resp.Status, body)
			}
			tr.CloseIdleConnections()
		}
	})

	if c, body := a.call(t, fleetA, "DELETE", "/v1/sessions/"+id, ""); c != 204 {
		t.Errorf("removing %s through node-a: %d %s", id, c, body)
	}
	a.stop(t)
	b.stop(t)
	assertClean(t)
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// auditNames reports whether one of n's audit lines names both id and who.
func auditNames(t *testing.T, n *fleetNode, id, who string) bool {
	t.Helper()
	for _, l := range n.auditLines(t) {
		line, _ := json.Marshal(l)
		if bytes.Contains(line, []byte(id)) && strings.HasPrefix(fmt.Sprint(l["caller"]), who) {
			return true
		}
	}
	return false
}

// forwardLine reports whether n's audit log has, or gets within 10 s (the
// line is written once the answer has gone back), a request_forwarded line
// for session id from who, sent to a member and answered code.
func forwardLine(t *testing.T, n *fleetNode, id, who string, code int) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, l := range n.auditLines(t) {
			if l["event"] == "request_forwarded" && l["session"] == id && strings.HasPrefix(fmt.Sprint(l["caller"]), who) && l["member"] != nil && l["http_status"] == float64(code) {
				return true
			}
		}
	}
	return false
}

// e2bCreate makes a sandbox through the E2B API at api: its ID and envd
// access token.
func e2bCreate(t *testing.T, api string) (string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", api+"/sandboxes", strings.NewReader(`{"templateID":"base","timeout":300}`))
	req.Header.Set("X-API-KEY", fleetE2B)
	req.Header.Set("Content-Type", "application/json")
	c, body := e2bDo(t, req)
	var sb struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if c != 201 || json.Unmarshal([]byte(body), &sb) != nil || sb.SandboxID == "" || sb.EnvdAccessToken == "" {
		t.Fatalf("creating a sandbox at %s: %d %s", api, c, body)
	}
	return sb.SandboxID, sb.EnvdAccessToken
}

func e2bDo(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}
