package egress

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// The secrets the tests inject: no byte of them may reach the sandbox.
const (
	secretAuth = "Bearer s3cret-value"
	secretKey  = "k3y-s3cret"
)

// injected is what the upstream of api.test must receive.
var injected = http.Header{"Authorization": {secretAuth}, "X-Api-Key": {secretKey}}

// apiWorld is what the injection tests' sandboxes reach, on loopback
// behind testDial: one TLS server answering for api.test (203.0.113.40),
// plain.test (.41), bad.test (.42, with a certificate of a CA no one
// trusts), and a plain HTTP one for api.test:80 and nottls.test:443 (.43).
// Their certificates come from pub, a stand-in for a public CA.
type apiWorld struct {
	pub    *CA
	roots  *x509.CertPool // trusts pub
	tlsSrv *httptest.Server
	http   *httptest.Server
	dial   Dialer
	up     *testUpstream

	mu   sync.Mutex
	seen []seenRequest
}

// seenRequest is a request an upstream received.
type seenRequest struct {
	host, path string
	header     http.Header
}

func newAPIWorld(t *testing.T) *apiWorld {
	t.Helper()
	w := &apiWorld{}
	var err error
	if w.pub, err = NewCA(); err != nil {
		t.Fatal(err)
	}
	w.roots = caPool(w.pub)
	api, err := w.pub.leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	bad := selfSigned(t, "bad.test")
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.seen = append(w.seen, seenRequest{r.Host, r.URL.Path, r.Header.Clone()})
		w.mu.Unlock()
		fmt.Fprintf(rw, "hello from %s%s %s", r.Host, r.URL.Path, body)
	})
	w.tlsSrv = httptest.NewUnstartedServer(handler)
	w.tlsSrv.TLS = &tls.Config{
		// What a client that sends no SNI gets.
		Certificates: []tls.Certificate{*api},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if h.ServerName == "bad.test" {
				return bad, nil
			}
			return w.pub.leaf(h.ServerName)
		},
	}
	// The clients that refuse a certificate are what some tests are about.
	w.tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	w.tlsSrv.StartTLS()
	t.Cleanup(w.tlsSrv.Close)
	w.http = httptest.NewServer(handler)
	t.Cleanup(w.http.Close)
	w.up = startUpstream(t, map[string][]string{
		"api.test":    {"203.0.113.40"},
		"plain.test":  {"203.0.113.41"},
		"bad.test":    {"203.0.113.42"},
		"nottls.test": {"203.0.113.43"},
	})
	w.dial, _ = testDial(map[string]string{
		upstreamDNS:         w.up.addr,
		"203.0.113.40:443":  w.tlsSrv.Listener.Addr().String(),
		"203.0.113.40:8443": w.tlsSrv.Listener.Addr().String(),
		"203.0.113.41:443":  w.tlsSrv.Listener.Addr().String(),
		"203.0.113.42:443":  w.tlsSrv.Listener.Addr().String(),
		"203.0.113.40:80":   w.http.Listener.Addr().String(),
		"203.0.113.43:443":  w.http.Listener.Addr().String(),
	})
	return w
}

// gateway starts a gateway that injects secretAuth and secretKey into
// api.test's requests and the Authorization of bad.test's and
// nottls.test's, with a CA of its own; cfg sets the rest.
func (w *apiWorld) gateway(t *testing.T, cfg Config) (*testGateway, *CA) {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	cfg.CA, cfg.Dial = ca, w.dial
	cfg.Policy = mustPolicy(t, "api.test:443,80,8443", "plain.test", "bad.test", "nottls.test")
	cfg.Inject = []Injection{
		{Host: "api.test", Header: "Authorization", Value: secretAuth},
		{Host: "api.test", Header: "X-Api-Key", Value: secretKey},
		{Host: "bad.test", Header: "Authorization", Value: secretAuth},
		{Host: "nottls.test", Header: "Authorization", Value: secretAuth},
	}
	return startGateway(t, cfg, nil), ca
}

// requests returns what the upstreams received so far.
func (w *apiWorld) requests() []seenRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seenRequest(nil), w.seen...)
}

// selfSigned returns a certificate for name signed by its own key, which
// no pool of roots trusts.
func selfSigned(t *testing.T, name string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// caPool returns a pool trusting ca alone.
func caPool(ca *CA) *x509.CertPool {
	return caPoolPEM(ca.CertPEM())
}

func caPoolPEM(pem []byte) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return pool
}

// httpsConn is a TLS connection through the proxy on which requests are
// written and their answers read, one at a time.
type httpsConn struct {
	t  *testing.T
	tc *tls.Conn
	br *bufio.Reader
}

// dialTLS speaks TLS to serverName over c, trusting roots alone.
func dialTLS(t *testing.T, c net.Conn, serverName string, roots *x509.CertPool) *httpsConn {
	t.Helper()
	tc := tls.Client(c, &tls.Config{ServerName: serverName, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS handshake with %s through the proxy: %v", serverName, err)
	}
	return &httpsConn{t: t, tc: tc, br: bufio.NewReader(tc)}
}

// do writes raw, a request, and returns the answer's status, header and
// body.
func (h *httpsConn) do(raw string) (int, http.Header, string) {
	h.t.Helper()
	if _, err := io.WriteString(h.tc, raw); err != nil {
		h.t.Fatalf("writing %q: %v", raw, err)
	}
	resp, err := http.ReadResponse(h.br, nil)
	if err != nil {
		h.t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading the body of the answer to %q: %v", raw, err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

// closed reports whether the proxy ended the connection.
func (h *httpsConn) closed() bool {
	h.t.Helper()
	h.tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := h.br.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		h.t.Fatal("the proxy neither served nor closed the connection")
	}
	return n == 0 && err != nil
}

// noSecret fails the test if s holds an injected value.
func noSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, v := range []string{secretAuth, secretKey, "s3cret"} {
		if strings.Contains(s, v) {
			t.Errorf("%s holds the secret %q: %s", what, v, s)
		}
	}
}

// checkReport fails the test if r, in any form, holds an injected value.
func checkReport(t *testing.T, r Report) {
	t.Helper()
	js, _ := json.Marshal(r)
	for _, s := range []string{fmt.Sprintf("%+v", r), fmt.Sprintf("%#v", r), string(js)} {
		noSecret(t, "the report", s)
	}
}

// checkInjected fails the test unless the requests upstream carry the
// injected headers and none of what the sandbox sent under those names.
func checkInjected(t *testing.T, seen []seenRequest) {
	t.Helper()
	for _, r := range seen {
		for name, want := range injected {
			if got := r.header.Values(name); len(got) != 1 || got[0] != want[0] {
				t.Errorf("upstream got %s %s with %s = %q, want only the injected value", r.host, r.path, name, got)
			}
		}
		if r.header.Get("Proxy-Authorization") != "" {
			t.Errorf("upstream got %s %s with Proxy-Authorization, want it stripped", r.host, r.path)
		}
	}
}

func TestInjectTransparent(t *testing.T) {
	checkGoroutines(t)
	w := newAPIWorld(t)
	g, ca := w.gateway(t, Config{Roots: w.roots})
	g.resolve("api.test")
	h := dialTLS(t, g.dial("203.0.113.40:443"), "api.test", caPool(ca))
	state := h.tc.ConnectionState()
	if state.NegotiatedProtocol != "http/1.1" {
		t.Errorf("ALPN = %q, want http/1.1 (h2 offered too)", state.NegotiatedProtocol)
	}
	if err := state.PeerCertificates[0].CheckSignatureFrom(ca.cert); err != nil {
		t.Errorf("the proxy's certificate is not the run CA's: %v", err)
	}

	status, _, body := h.do("GET /one HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer placeholder\r\nProxy-Authorization: Basic eDp5\r\n\r\n")
	if status != 200 || body != "hello from api.test/one " {
		t.Errorf("GET /one = %d %q, want 200 hello from api.test/one", status, body)
	}
	// Another request on the connection, with the names in other cases,
	// twice, and a body.
	status, _, body = h.do("POST /two HTTP/1.1\r\nHost: API.test:443\r\nauthorization: a\r\nAUTHORIZATION: b\r\nx-api-key: c\r\nContent-Length: 4\r\n\r\nbody")
	if status != 200 || body != "hello from API.test:443/two body" {
		t.Errorf("POST /two = %d %q, want 200 hello from API.test:443/two body", status, body)
	}
	seen := w.requests()
	if len(seen) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(seen))
	}
	checkInjected(t, seen)

	status, _, body = h.do("GET /three HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer placeholder\r\n\r\n")
	want := "boxer: this connection is for api.test, not other.test: open one of its own\n"
	if status != http.StatusMisdirectedRequest || body != want {
		t.Errorf("GET for other.test on api.test's connection = %d %q, want 421 %q", status, body, want)
	}
	if !h.closed() {
		t.Error("the connection stayed open after a request for another host")
	}
	if n := len(w.requests()); n != 2 {
		t.Errorf("upstream got %d requests, want 2: the one for other.test forwarded", n)
	}

	r := g.Close()
	if r.Intercepted != 2 || r.Connections != 1 || r.BytesIn == 0 || r.BytesOut == 0 || len(r.Denied) != 0 {
		t.Errorf("report = %+v, want 2 intercepted, 1 connection upstream (kept alive), bytes both ways, no denial", r)
	}
	checkReport(t, r)
}

func TestInjectTransparentOtherPort(t *testing.T) {
	w := newAPIWorld(t)
	g, ca := w.gateway(t, Config{Roots: w.roots})
	g.resolve("api.test")
	h := dialTLS(t, g.dial("203.0.113.40:8443"), "api.test", caPool(ca))
	// HTTP/1.0 without Host: the connection's name is the request's.
	status, _, body := h.do("GET /old HTTP/1.0\r\nAuthorization: x\r\n\r\n")
	if status != 200 || body != "hello from api.test/old " {
		t.Errorf("GET /old = %d %q, want 200 hello from api.test/old", status, body)
	}
	checkInjected(t, w.requests())
	if !h.closed() {
		t.Error("the connection stayed open after an HTTP/1.0 request")
	}
}

func TestInjectNotIntercepted(t *testing.T) {
	checkGoroutines(t)
	w := newAPIWorld(t)
	// TLS without SNI needs the operator's leave (see TestTransparentNoSNI).
	g, _ := w.gateway(t, Config{Roots: w.roots, AllowNoSNI: true})
	g.resolve("plain.test")
	g.resolve("api.test")
	const req = "GET /p HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer placeholder\r\n\r\n"
	tests := []struct {
		name       string
		dst        string
		serverName string // "": no SNI
		host       string
	}{
		{"a host without a rule", "203.0.113.41:443", "plain.test", "plain.test"},
		{"no SNI to an injected host's address", "203.0.113.40:443", "", "api.test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(w.requests())
			cfg := &tls.Config{ServerName: tc.serverName, RootCAs: w.roots}
			if tc.serverName == "" {
				// Without a name, Go's client verifies nothing: check the
				// chain below.
				cfg.InsecureSkipVerify = true
			}
			tc2 := tls.Client(g.dial(tc.dst), cfg)
			tc2.SetDeadline(time.Now().Add(10 * time.Second))
			if err := tc2.Handshake(); err != nil {
				t.Fatalf("TLS through the proxy: %v", err)
			}
			leaf := tc2.ConnectionState().PeerCertificates[0]
			if err := leaf.CheckSignatureFrom(w.pub.cert); err != nil {
				t.Errorf("the client saw a certificate not the upstream's (issuer %q): %v", leaf.Issuer, err)
			}
			h := &httpsConn{t: t, tc: tc2, br: bufio.NewReader(tc2)}
			if status, _, _ := h.do(fmt.Sprintf(req, tc.host)); status != 200 {
				t.Errorf("status = %d, want 200", status)
			}
			seen := w.requests()[before:]
			if len(seen) != 1 {
				t.Fatalf("upstream got %d requests, want 1", len(seen))
			}
			if got := seen[0].header; got.Get("Authorization") != "Bearer placeholder" || got.Get("X-Api-Key") != "" {
				t.Errorf("upstream got %v, want the request untouched", got)
			}
		})
	}
	if r := g.Close(); r.Intercepted != 0 {
		t.Errorf("Intercepted = %d, want 0", r.Intercepted)
	}
}

// proxyClient is an HTTP client that uses the gateway as its HTTPS_PROXY
// and HTTP_PROXY and trusts roots.
func (g *testGateway) proxyClient(roots *x509.CertPool) *http.Client {
	proxyURL, _ := url.Parse("http://" + g.proxyAddr())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: roots}}
	g.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestInjectExplicit(t *testing.T) {
	checkGoroutines(t)
	w := newAPIWorld(t)
	g, ca := w.gateway(t, Config{Roots: w.roots})
	c := g.proxyClient(caPool(ca))
	for _, path := range []string{"/one", "/two"} {
		status, body := get(t, c, "https://api.test"+path, http.Header{"Authorization": {"Bearer placeholder"}})
		if status != 200 || body != "hello from api.test"+path+" " {
			t.Errorf("GET https://api.test%s = %d %q, want 200 hello", path, status, body)
		}
	}
	seen := w.requests()
	if len(seen) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(seen))
	}
	checkInjected(t, seen)

	// A host without a rule is tunnelled: the client sees the upstream's
	// certificate, and the upstream the client's header.
	plain := g.proxyClient(w.roots)
	if status, _ := get(t, plain, "https://plain.test/", http.Header{"Authorization": {"Bearer mine"}}); status != 200 {
		t.Errorf("GET https://plain.test/ = %d, want 200", status)
	}
	if got := w.requests()[2].header.Get("Authorization"); got != "Bearer mine" {
		t.Errorf("plain.test got Authorization %q, want the client's", got)
	}

	tests := []struct {
		dest   string
		status int
		body   string
	}{
		{"api.test:9000", 403, "boxer: api.test:9000 refused: port 9000 not allowed for name\n"},
		{"api.test", 400, "boxer: api.test refused: give host:port, port 1 to 65535\n"},
	}
	for _, tc := range tests {
		resp, body := connectOnce(t, g.proxyAddr(), tc.dest)
		if resp.StatusCode != tc.status || string(body) != tc.body {
			t.Errorf("CONNECT %s = %d %q, want %d %q", tc.dest, resp.StatusCode, body, tc.status, tc.body)
		}
	}

	c.Transport.(*http.Transport).CloseIdleConnections()
	plain.Transport.(*http.Transport).CloseIdleConnections()
	r := g.Close()
	if r.Intercepted != 2 || r.Connections != 2 || !hasDenial(r, "api.test:9000", "port 9000 not allowed for name") {
		t.Errorf("report = %+v, want 2 intercepted, 2 connections (api.test kept alive, plain.test) and api.test:9000 refused", r)
	}
	checkReport(t, r)
}

func TestInjectExplicitPlainTunnel(t *testing.T) {
	w := newAPIWorld(t)
	g, _ := w.gateway(t, Config{Roots: w.roots})
	raw, err := net.Dial("tcp", g.proxyAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	// A tunnel to api.test:80 that speaks plain HTTP, with the CONNECT.
	io.WriteString(raw, "CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\n"+
		"GET /plain HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer placeholder\r\n\r\n")
	br := bufio.NewReader(raw)
	for _, method := range []string{"CONNECT", "GET"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to %s: %v", method, err)
		}
		if method == "GET" {
			io.Copy(io.Discard, resp.Body)
		}
		if resp.StatusCode != 200 {
			t.Errorf("%s: status = %d, want 200", method, resp.StatusCode)
		}
	}
	seen := w.requests()
	if len(seen) != 1 || seen[0].header.Get("Authorization") != "Bearer placeholder" {
		t.Errorf("upstream got %v, want one request with the client's header", seen)
	}
	if r := g.Report(); r.Intercepted != 0 {
		t.Errorf("Intercepted = %d, want 0", r.Intercepted)
	}
}

func TestInjectPlainHTTP(t *testing.T) {
	w := newAPIWorld(t)
	g, _ := w.gateway(t, Config{Roots: w.roots})
	g.resolve("api.test")
	c := g.dial("203.0.113.40:80")
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /transparent HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: mine\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	if status, _ := get(t, g.proxyClient(nil), "http://api.test/explicit", nil); status != 200 {
		t.Errorf("GET http://api.test/explicit = %d, want 200", status)
	}
	seen := w.requests()
	if len(seen) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(seen))
	}
	if h := seen[0].header; h.Get("Authorization") != "" || h.Get("X-Api-Key") != "mine" {
		t.Errorf("upstream got %v over transparent HTTP, want the request as sent", h)
	}
	if h := seen[1].header; h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
		t.Errorf("upstream got %v through HTTP_PROXY, want no injected header", h)
	}
	if r := g.Report(); r.Intercepted != 0 {
		t.Errorf("Intercepted = %d, want 0", r.Intercepted)
	}
}

func TestInjectUpstreamTLSFails(t *testing.T) {
	checkGoroutines(t)
	w := newAPIWorld(t)
	const untrusted = "upstream certificate not trusted: x509: certificate signed by unknown authority"
	tests := []struct {
		name     string
		explicit bool
		roots    *x509.CertPool // nil: the host's trust store
		host     string
		dst      string
		reason   string
	}{
		{"transparent, a CA not in Roots", false, w.roots, "bad.test", "203.0.113.42:443", untrusted},
		{"explicit, a CA not in Roots", true, w.roots, "bad.test", "203.0.113.42:443", untrusted},
		{"transparent, the host's trust store", false, nil, "api.test", "203.0.113.40:443", untrusted},
		{"explicit, not TLS", true, w.roots, "nottls.test", "203.0.113.43:443", "upstream TLS handshake failed: tls: first record does not look like a TLS handshake"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, ca := w.gateway(t, Config{Roots: tc.roots})
			before := len(w.requests())
			var status int
			var body string
			if tc.explicit {
				status, body = get(t, g.proxyClient(caPool(ca)), "https://"+tc.host+"/", http.Header{"Authorization": {"Bearer placeholder"}})
			} else {
				g.resolve(tc.host)
				h := dialTLS(t, g.dial(tc.dst), tc.host, caPool(ca))
				status, _, body = h.do("GET / HTTP/1.1\r\nHost: " + tc.host + "\r\n\r\n")
			}
			dest := tc.host + ":443"
			want := "boxer: " + dest + " " + tc.reason + "\n"
			if status != http.StatusBadGateway || body != want {
				t.Errorf("answer = %d %q, want 502 %q", status, body, want)
			}
			noSecret(t, "the answer", body)
			if n := len(w.requests()) - before; n != 0 {
				t.Errorf("upstream got %d requests, want none", n)
			}
			r := g.Close()
			found := false
			for _, d := range r.Denied {
				if d.Destination == dest && d.Reason == tc.reason && d.Status == http.StatusBadGateway {
					found = true
				}
			}
			if !found || r.Intercepted != 0 {
				t.Errorf("report = %+v, want %s denied with status 502, nothing intercepted", r, dest)
			}
			js, _ := json.Marshal(r)
			if !strings.Contains(string(js), `"status":502`) {
				t.Errorf("report JSON %s, want the denial's status", js)
			}
			checkReport(t, r)
		})
	}
}

// Denials without a status keep their JSON as it was.
func TestDenialJSON(t *testing.T) {
	js, err := json.Marshal(Report{Denied: []Denial{{Destination: "evil.com:443", Reason: "name not allowed"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allowed":null,"connections":0,"bytes_in":0,"bytes_out":0,"denied":[{"destination":"evil.com:443","reason":"name not allowed"}]}`
	if string(js) != want {
		t.Errorf("JSON = %s, want %s", js, want)
	}
}

func TestInjectInvalidValue(t *testing.T) {
	w := newAPIWorld(t)
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, Config{
		Policy: mustPolicy(t, "api.test"),
		Dial:   w.dial,
		Inject: []Injection{{Host: "api.test", Header: "Authorization", Value: "s3cret\r\nX-Smuggled: 1"}},
		CA:     ca,
		Roots:  w.roots,
	}, nil)
	g.resolve("api.test")
	h := dialTLS(t, g.dial("203.0.113.40:443"), "api.test", caPool(ca))
	status, _, body := h.do("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
	if status != http.StatusBadGateway {
		t.Errorf("status = %d, want 502", status)
	}
	noSecret(t, "the answer", body)
	if len(w.requests()) != 0 {
		t.Errorf("upstream got %v, want nothing", w.requests())
	}
	checkReport(t, g.Close())
}

func TestInjectWithoutCA(t *testing.T) {
	w := newAPIWorld(t)
	g := startGateway(t, Config{
		Policy: mustPolicy(t, "api.test"),
		Dial:   w.dial,
		Inject: []Injection{{Host: "api.test", Header: "Authorization", Value: secretAuth}},
	}, nil)
	g.resolve("api.test")
	c := g.dial("203.0.113.40:443")
	tc := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: w.roots})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Fatal("TLS to an injected host without a CA worked, want it refused")
	}
	if len(w.requests()) != 0 {
		t.Error("the upstream got a request")
	}
	r := g.Close()
	if !hasDenial(r, "api.test:443", "intercepting TLS: no CA to issue certificates with") {
		t.Errorf("denials = %v, want api.test:443 refused for want of a CA", r.Denied)
	}
}

func TestInjectCloseWithOpenConnection(t *testing.T) {
	checkGoroutines(t)
	w := newAPIWorld(t)
	g, ca := w.gateway(t, Config{Roots: w.roots})
	g.resolve("api.test")
	h := dialTLS(t, g.dial("203.0.113.40:443"), "api.test", caPool(ca))
	if status, _, _ := h.do("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n"); status != 200 {
		t.Fatalf("status = %d, want 200", status)
	}
	done := make(chan Report)
	go func() { done <- g.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with an intercepted connection open")
	}
	if !h.closed() {
		t.Error("the intercepted connection stayed open after Close")
	}
}

func TestInjectQuota(t *testing.T) {
	w := newAPIWorld(t)
	g, ca := w.gateway(t, Config{Roots: w.roots, MaxBytes: 20_000})
	g.resolve("api.test")
	h := dialTLS(t, g.dial("203.0.113.40:443"), "api.test", caPool(ca))
	big := strings.Repeat("x", 30_000)
	io.WriteString(h.tc, fmt.Sprintf("POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: %d\r\n\r\n%s", len(big), big))
	if _, err := http.ReadResponse(h.br, nil); err == nil {
		t.Error("a request larger than the quota was answered")
	}
	r := g.Close()
	if !r.QuotaExceeded || r.BytesIn+r.BytesOut > 20_000+64<<10 {
		t.Errorf("report = %+v, want the quota exceeded", r)
	}
}

func TestInjectionString(t *testing.T) {
	cfg := Config{Inject: []Injection{{Host: "api.test", Header: "Authorization", Value: secretAuth}}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		noSecret(t, "Config printed with "+format, fmt.Sprintf(format, cfg))
		noSecret(t, "Injection printed with "+format, fmt.Sprintf(format, cfg.Inject[0]))
	}
	if got, want := cfg.Inject[0].String(), "api.test: Authorization: [redacted]"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestSetInjected(t *testing.T) {
	h := http.Header{
		"Authorization": {"a", "b"},
		"authorization": {"c"},
		"X-Keep":        {"1"},
	}
	setInjected(h, []Injection{
		{Header: "Authorization", Value: "first"},
		{Header: "X-Api-Key", Value: "k"},
		{Header: "Authorization", Value: "last"},
	})
	want := http.Header{"Authorization": {"last"}, "X-Api-Key": {"k"}, "X-Keep": {"1"}}
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("header = %v, want %v", h, want)
	}
}

func TestInjectExplicitServerName(t *testing.T) {
	w := newAPIWorld(t)
	g, ca := w.gateway(t, Config{Roots: w.roots})
	tests := []struct {
		name, sni, dest, reason string
	}{
		{"another allowed name", "plain.test", "plain.test:443", "TLS server name plain.test is not the CONNECT target api.test"},
		{"no name", "", "api.test:443", reasonNoSNI},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := connectTunnel(t, g.proxyAddr(), "api.test:443")
			tc2 := tls.Client(c, &tls.Config{ServerName: tc.sni, RootCAs: caPool(ca), InsecureSkipVerify: tc.sni == ""})
			tc2.SetDeadline(time.Now().Add(10 * time.Second))
			if err := tc2.Handshake(); err == nil {
				t.Fatal("TLS in a tunnel to api.test worked, want it refused")
			}
			waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.dest, tc.reason) })
		})
	}
	if n := len(w.requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}
