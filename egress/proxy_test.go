package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// world is what the tests' sandboxes reach: a TLS server standing for
// example.com at 203.0.113.10:443, a plain HTTP one at 203.0.113.10:80,
// an echo server for db.example.com at 203.0.113.30:5432 and :6000, all
// on loopback behind testDial, and the upstream DNS that names them.
type world struct {
	tlsSrv  *httptest.Server
	httpSrv *httptest.Server
	echo    net.Listener
	up      *testUpstream
	dial    Dialer
	dials   *atomic.Int64
	roots   *x509.CertPool
	// headers is the last request's header the HTTP server saw.
	headers atomic.Pointer[http.Header]
}

// bigSize is the size of /big, more than the quota tests allow.
const bigSize = 1 << 20

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{}
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		w.headers.Store(&h)
		if r.URL.Path == "/big" {
			rw.Write(bytes.Repeat([]byte("x"), bigSize))
			return
		}
		fmt.Fprintf(rw, "hello from %s", r.Host)
	})
	w.tlsSrv = httptest.NewTLSServer(handler)
	t.Cleanup(w.tlsSrv.Close)
	w.httpSrv = httptest.NewServer(handler)
	t.Cleanup(w.httpSrv.Close)
	w.roots = x509.NewCertPool()
	w.roots.AddCert(w.tlsSrv.Certificate())
	var err error
	if w.echo, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.echo.Close() })
	go func() {
		for {
			c, err := w.echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	w.up = startUpstream(t, map[string][]string{
		"example.com":      {"203.0.113.10"},
		"www.example.com":  {"203.0.113.10"},
		"db.example.com":   {"203.0.113.30"},
		"evil.com":         {"203.0.113.10"},
		"key.example.com":  {"203.0.113.10"},
		"loop.example.com": {"127.0.0.1"},
	})
	w.dial, w.dials = testDial(map[string]string{
		upstreamDNS:         w.up.addr,
		"203.0.113.10:443":  w.tlsSrv.Listener.Addr().String(),
		"203.0.113.10:80":   w.httpSrv.Listener.Addr().String(),
		"203.0.113.30:5432": w.echo.Addr().String(),
		"203.0.113.30:6000": w.echo.Addr().String(),
		"203.0.113.31:22":   w.echo.Addr().String(),
	})
	return w
}

func (w *world) gateway(t *testing.T, cfg Config, entries ...string) *testGateway {
	t.Helper()
	cfg.Policy = mustPolicy(t, entries...)
	cfg.Dial = w.dial
	return startGateway(t, cfg, nil)
}

// resolve has the sandbox look name up, as it would before connecting.
func (g *testGateway) resolve(name string) {
	g.t.Helper()
	if resp := g.query("udp", name, dns.TypeA); resp.Rcode != dns.RcodeSuccess {
		g.t.Fatalf("resolving %s: %s", name, dns.RcodeToString[resp.Rcode])
	}
}

// getTLS speaks HTTPS to serverName over c and returns the body.
func (w *world) getTLS(c net.Conn, serverName, path string) (string, error) {
	tc := tls.Client(c, &tls.Config{ServerName: serverName, RootCAs: w.roots})
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	req, _ := http.NewRequest("GET", "https://"+serverName+path, nil)
	if err := req.Write(tc); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// refused reports whether the proxy closed c without a byte.
func refused(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the proxy neither served nor closed the connection")
	}
	return n == 0 && err != nil
}

func TestTransparentTLS(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com")
	g.resolve("example.com")
	body, err := w.getTLS(g.dial("203.0.113.10:443"), "example.com", "/")
	if err != nil {
		t.Fatalf("HTTPS through the proxy: %v", err)
	}
	if body != "hello from example.com" {
		t.Errorf("body = %q, want hello from example.com", body)
	}
	r := g.Close()
	if r.Connections != 1 || r.BytesIn == 0 || r.BytesOut == 0 || len(r.Denied) != 0 {
		t.Errorf("report = %+v, want 1 connection, bytes both ways, no denial", r)
	}
	if len(r.Allowed) != 1 || r.Allowed[0] != "example.com" {
		t.Errorf("Allowed = %q, want [example.com]", r.Allowed)
	}
}

func TestTransparentRefusals(t *testing.T) {
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com", "db.example.com:5432")
	g.resolve("example.com")
	g.resolve("db.example.com")
	tests := []struct {
		name   string
		dst    string
		sni    string // TLS with this SNI; plain bytes if ""
		plain  string
		dest   string
		reason string
	}{
		{"SNI not allowed", "203.0.113.10:443", "evil.com", "", "evil.com:443", "name not allowed"},
		{"SNI allowed, address not handed out", "203.0.113.99:443", "example.com", "", "example.com:443 (203.0.113.99)", "address was not resolved for name"},
		{"SNI allowed, port not", "203.0.113.10:8443", "example.com", "", "example.com:8443", "port 8443 not allowed for name"},
		{"SNI of another allowed name", "203.0.113.30:5432", "example.com", "", "example.com:5432", "port 5432 not allowed for name"},
		{"Host not allowed", "203.0.113.10:443", "", "GET / HTTP/1.1\r\nHost: evil.com\r\n\r\n", "evil.com:443", "name not allowed"},
		{"Host after blank lines", "203.0.113.10:443", "", "\r\n\r\nGET / HTTP/1.1\r\nHost: evil.com\r\n\r\n", "evil.com:443", "name not allowed"},
		{"plain TCP on a port not allowed", "203.0.113.30:6000", "", "ping", "203.0.113.30:6000", "address not obtained from an allowed name"},
		{"plain TCP to an address not handed out", "203.0.113.31:22", "", "SSH-2.0-x\r\n", "203.0.113.31:22", "address not obtained from an allowed name"},
		{"the gateway", "127.0.0.1:22", "", "ping", "127.0.0.1:22", "boxer's gateway"},
		{"loopback", "127.0.0.2:5432", "", "ping", "127.0.0.2:5432", "loopback"},
		{"cut short ClientHello", "203.0.113.10:443", "", "\x16\x03\x01\x02\x00\x01", "203.0.113.10:443", "unreadable TLS ClientHello"},
		{"cut short request", "203.0.113.10:443", "", "GET / HTTP/1.1\r\nHost: exa", "203.0.113.10:443", "unreadable HTTP request"},
	}
	dials := w.dials.Load()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := g.dial(tc.dst)
			if tc.sni != "" {
				if _, err := w.getTLS(c, tc.sni, "/"); err == nil {
					t.Fatal("HTTPS through the proxy worked, want it refused")
				}
			} else {
				io.WriteString(c, tc.plain)
				if strings.HasPrefix(tc.name, "cut short") {
					c.(*net.TCPConn).CloseWrite()
				}
				if !refused(t, c) {
					t.Fatal("the connection was served, want it refused")
				}
			}
			waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.dest, tc.reason) })
		})
	}
	if n := w.dials.Load(); n != dials {
		t.Errorf("%d dials upstream for refused connections, want none", n-dials)
	}
}

func TestTransparentPlainTCP(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "db.example.com:5432,6000")
	g.resolve("db.example.com")
	for _, dst := range []string{"203.0.113.30:5432", "203.0.113.30:6000"} {
		c := g.dial(dst)
		msg := "ping " + dst
		io.WriteString(c, msg)
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil || string(got) != msg {
			t.Errorf("%s: echo = %q, %v, want %q", dst, got, err, msg)
		}
	}
	// A program that waits for the server's greeting sends nothing first.
	g2 := startGateway(t, Config{Policy: mustPolicy(t, "db.example.com:5432"), Dial: w.dial}, func(g *Gateway) { g.peek = 50 * time.Millisecond })
	g2.resolve("db.example.com")
	c := g2.dial("203.0.113.30:5432")
	time.Sleep(100 * time.Millisecond)
	io.WriteString(c, "late")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "late" {
		t.Errorf("after the peek timeout: %q, %v, want late", buf, err)
	}
	r := g.Close()
	if r.Connections != 2 || r.BytesIn != r.BytesOut || r.BytesIn == 0 {
		t.Errorf("report = %+v, want 2 connections and as many bytes in as out", r)
	}
}

func TestTransparentExplicitAddressRule(t *testing.T) {
	w := newWorld(t)
	g := w.gateway(t, Config{}, "203.0.113.31:22")
	c := g.dial("203.0.113.31:22")
	io.WriteString(c, "SSH-2.0-test\r\n")
	buf := make([]byte, 14)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "SSH-2.0-test\r\n" {
		t.Errorf("echo = %q, %v, want the banner back", buf, err)
	}
}

// proxyClient is an HTTP client that uses the gateway as its HTTP_PROXY.
func (w *world) proxyClient(g *testGateway) *http.Client {
	proxyURL, _ := url.Parse("http://" + g.proxyAddr())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: w.roots}}
	g.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, u string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestExplicitConnect(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com")
	c := w.proxyClient(g)
	for range 2 {
		if status, body := get(t, c, "https://example.com/", nil); status != 200 || body != "hello from example.com" {
			t.Errorf("GET https://example.com/ = %d %q, want 200 hello from example.com", status, body)
		}
	}
	_, err := c.Get("https://evil.com/")
	if err == nil {
		t.Fatal("GET https://evil.com/ through the proxy worked, want it refused")
	}
	// A raw CONNECT shows the refusal's status and body.
	raw, err := net.Dial("tcp", g.proxyAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	io.WriteString(raw, "CONNECT evil.com:443 HTTP/1.1\r\nHost: evil.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || string(body) != "boxer: evil.com:443 refused: name not allowed\n" {
		t.Errorf("CONNECT evil.com:443 = %d %q, want 403 with the reason", resp.StatusCode, body)
	}
	tr := c.Transport.(*http.Transport)
	tr.CloseIdleConnections()
	r := g.Close()
	if r.Connections != 1 || !hasDenial(r, "evil.com:443", "name not allowed") {
		t.Errorf("report = %+v, want 1 connection (keep-alive) and evil.com:443 refused", r)
	}
}

func TestExplicitConnectRefusals(t *testing.T) {
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com", "203.0.113.31:22", "10.0.0.0/8:5432")
	tests := []struct {
		dest   string
		status int
		reason string
	}{
		{"example.com:80", 403, "port 80 not allowed for name"},
		{"203.0.113.31:443", 403, "port 443 not allowed for address"},
		{"203.0.113.32:22", 403, "address not allowed"},
		{"127.0.0.1:" + fmt.Sprint(g.ProxyPort()), 403, "boxer's gateway"},
		{"127.0.0.5:22", 403, "loopback"},
		{"evil.com", 400, "give host:port, port 1 to 65535"},
	}
	for _, tc := range tests {
		resp, body := connectOnce(t, g.proxyAddr(), tc.dest)
		want := fmt.Sprintf("boxer: %s refused: %s\n", tc.dest, tc.reason)
		if resp.StatusCode != tc.status || string(body) != want {
			t.Errorf("CONNECT %s = %d %q, want %d %q", tc.dest, resp.StatusCode, body, tc.status, want)
		}
	}
}

func TestExplicitAbsoluteForm(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com:80", "www.example.com:80")
	c := w.proxyClient(g)
	for _, host := range []string{"example.com", "www.example.com", "example.com"} {
		status, body := get(t, c, "http://"+host+"/", http.Header{"Proxy-Authorization": {"Basic eDp5"}, "X-Keep": {"1"}})
		if status != 200 || body != "hello from "+host {
			t.Errorf("GET http://%s/ = %d %q, want 200 hello from %s", host, status, body, host)
		}
		h := *w.headers.Load()
		if h.Get("Proxy-Authorization") != "" || h.Get("X-Keep") != "1" {
			t.Errorf("upstream saw headers %v, want X-Keep and no Proxy-*", h)
		}
	}
	if status, body := get(t, c, "http://evil.com/", nil); status != 403 || body != "boxer: evil.com:80 refused: name not allowed\n" {
		t.Errorf("GET http://evil.com/ = %d %q, want 403 with the reason", status, body)
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	// The proxy keeps a connection alive per host, as net/http does.
	if r := g.Close(); r.Connections != 2 {
		t.Errorf("Connections = %d, want 2 (one per host, kept alive)", r.Connections)
	}
}

func TestQuota(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{MaxBytes: 100_000}, "example.com", "db.example.com:5432")
	g.resolve("example.com")
	g.resolve("db.example.com")
	idle := g.dial("203.0.113.30:5432")
	io.WriteString(idle, "x")
	io.ReadFull(idle, make([]byte, 1))
	body, err := w.getTLS(g.dial("203.0.113.10:443"), "example.com", "/big")
	if err == nil && len(body) == bigSize {
		t.Fatalf("read all %d bytes of /big through a quota of 100000", len(body))
	}
	if !refused(t, idle) {
		t.Error("another connection stayed open past the quota")
	}
	if !refused(t, g.dial("203.0.113.30:5432")) {
		t.Error("a new connection was served past the quota")
	}
	r := g.Close()
	if !r.QuotaExceeded || r.BytesIn+r.BytesOut > 100_000+64<<10 {
		t.Errorf("report = %+v, want QuotaExceeded and little more than 100000 bytes", r)
	}
	quota := 0
	for _, d := range r.Denied {
		if d.Reason == "network quota of 100000 bytes exceeded" {
			quota++
		}
	}
	if quota != 1 {
		t.Errorf("denials = %v, want one for the quota", r.Denied)
	}
}

func TestMaxConns(t *testing.T) {
	w := newWorld(t)
	g := w.gateway(t, Config{MaxConns: 2}, "db.example.com:5432")
	g.resolve("db.example.com")
	var open []net.Conn
	for range 2 {
		c := g.dial("203.0.113.30:5432")
		io.WriteString(c, "x")
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatalf("echo: %v", err)
		}
		open = append(open, c)
	}
	if !refused(t, g.dial("203.0.113.30:5432")) {
		t.Error("a third connection was served, want it refused at 2")
	}
	if r := g.Report(); !hasDenial(r, "203.0.113.30:5432", "too many connections (max 2)") {
		t.Errorf("denials = %v, want too many connections", r.Denied)
	}
	open[0].Close()
	waitFor(t, "a slot", func() bool {
		g.run.mu.Lock()
		defer g.run.mu.Unlock()
		return g.run.active < 2
	})
	c := g.dial("203.0.113.30:5432")
	io.WriteString(c, "y")
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Errorf("after one closed: %v, want a connection served", err)
	}
}

func TestCloseWithOpenConnections(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "db.example.com:5432", "example.com")
	g.resolve("db.example.com")
	var conns []net.Conn
	for range 5 {
		c := g.dial("203.0.113.30:5432")
		io.WriteString(c, "x")
		io.ReadFull(c, make([]byte, 1))
		conns = append(conns, c)
	}
	// One still being peeked, one explicit and idle.
	conns = append(conns, g.dial("203.0.113.10:443"))
	explicit, err := net.Dial("tcp", g.proxyAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer explicit.Close()
	conns = append(conns, explicit)
	waitFor(t, "7 connections", func() bool {
		g.run.mu.Lock()
		defer g.run.mu.Unlock()
		return g.run.active == 7
	})
	done := make(chan Report)
	go func() { done <- g.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with connections open")
	}
	for i, c := range conns {
		if !refused(t, c) {
			t.Errorf("connection %d still open after Close", i)
		}
	}
	if r := g.Close(); r.Connections != 5 {
		t.Errorf("second Close: Connections = %d, want 5", r.Connections)
	}
}

func TestDecide(t *testing.T) {
	r := newRun(Config{
		Policy: mustPolicy(t, "example.com", "*.cdn.example.net:443,80", "db.example.com:5432", "10.0.0.0/8:5432", "203.0.113.50:22"),
		Local:  func(a netip.Addr) bool { return a == netip.MustParseAddr("203.0.113.200") },
	})
	r.remember("example.com", []netip.Addr{netip.MustParseAddr("203.0.113.10")})
	r.remember("a.cdn.example.net", []netip.Addr{netip.MustParseAddr("203.0.113.20")})
	r.remember("db.example.com", []netip.Addr{netip.MustParseAddr("10.0.0.7")})
	p := &proxy{run: r, self: netip.MustParseAddrPort("192.0.2.1:3128")}
	tests := []struct {
		dst, name, want string
	}{
		{"203.0.113.10:443", "example.com", ""},
		{"203.0.113.10:443", "", ""},
		{"203.0.113.10:80", "", reasonNotFromName},
		{"203.0.113.10:443", "a.cdn.example.net", reasonNotResolved},
		{"203.0.113.20:80", "a.cdn.example.net", ""},
		{"203.0.113.20:80", "", ""},
		{"203.0.113.20:8080", "a.cdn.example.net", "port 8080 not allowed for name"},
		{"203.0.113.11:443", "example.com", reasonNotResolved},
		{"203.0.113.10:443", "evil.com", reasonNameNotAllowed},
		{"203.0.113.50:22", "", ""},
		{"203.0.113.50:22", "evil.com", ""},
		{"10.0.0.7:5432", "db.example.com", ""},
		{"10.0.0.8:5432", "", ""},
		{"10.0.0.7:443", "", reasonNotFromName},
		{"127.0.0.1:443", "example.com", "loopback"},
		{"203.0.113.200:443", "", "the host's own address"},
		{"224.0.0.1:443", "", "multicast"},
	}
	for _, tc := range tests {
		if got := p.decide(netip.MustParseAddrPort(tc.dst), tc.name); got != tc.want {
			t.Errorf("decide(%s, %q) = %q, want %q", tc.dst, tc.name, got, tc.want)
		}
	}
}

func TestGatewayLifecycle(t *testing.T) {
	checkGoroutines(t)
	g, err := Listen(loopback)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if g.ProxyPort() == 0 || g.DNSPort() == 0 || g.ProxyPort() == g.DNSPort() {
		t.Errorf("ports: proxy %d, DNS %d, want two", g.ProxyPort(), g.DNSPort())
	}
	if got := g.dnsTCP.Addr().(*net.TCPAddr).Port; got != int(g.DNSPort()) {
		t.Errorf("DNS over TCP on port %d, want %d as over UDP", got, g.DNSPort())
	}
	if r := g.Report(); r.Connections != 0 || r.Allowed != nil {
		t.Errorf("Report before Start = %+v, want empty", r)
	}
	if r := g.Close(); r.Connections != 0 || r.Denied != nil {
		t.Errorf("Close without Start = %+v, want empty", r)
	}
	g.Close()
	g.Start(Config{})
	if _, err := net.DialTimeout("tcp", netip.AddrPortFrom(loopback, g.ProxyPort()).String(), time.Second); err == nil {
		t.Error("the proxy accepts connections after Close")
	}
}

func TestTransparentHTTP(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com:80", "www.example.com:80")
	g.resolve("example.com")
	g.resolve("www.example.com")
	c := g.dial("203.0.113.10:80")
	br := bufio.NewReader(c)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	for _, host := range []string{"example.com", "www.example.com", "evil.com"} {
		req, _ := http.NewRequest("GET", "http://"+host+"/", nil)
		req.Header.Set("Proxy-Authorization", "Basic eDp5")
		if err := req.Write(c); err != nil {
			t.Fatalf("writing a request for %s: %v", host, err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("reading the answer for %s: %v", host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want, wantStatus := "hello from "+host, 200
		if host == "evil.com" {
			want, wantStatus = "boxer: evil.com:80 refused: name not allowed\n", 403
		}
		if resp.StatusCode != wantStatus || string(body) != want {
			t.Errorf("GET http://%s/ on one connection = %d %q, want %d %q", host, resp.StatusCode, body, wantStatus, want)
		}
	}
	if h := *w.headers.Load(); h.Get("Proxy-Authorization") != "" {
		t.Errorf("upstream saw %v, want no Proxy-* header", h)
	}
	if !refused(t, c) {
		t.Error("the connection stayed open after a refused request")
	}
}

func TestExplicitNameBlockedAddress(t *testing.T) {
	w := newWorld(t)
	g := w.gateway(t, Config{}, "loop.example.com")
	status, body := get(t, w.proxyClient(g), "http://loop.example.com:443/", nil)
	if status != 403 || body != "boxer: loop.example.com:443 refused: name has no allowed address\n" {
		t.Errorf("GET = %d %q, want 403 name has no allowed address", status, body)
	}
	if r := g.Report(); !hasDenial(r, "loop.example.com", "resolves to 127.0.0.1: loopback") {
		t.Errorf("denials = %v, want loop.example.com resolves to 127.0.0.1", r.Denied)
	}
}

func TestIdleTimeout(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := startGateway(t, Config{Policy: mustPolicy(t, "db.example.com:5432"), Dial: w.dial},
		func(g *Gateway) { g.idle = 200 * time.Millisecond })
	g.resolve("db.example.com")
	busy, quiet := g.dial("203.0.113.30:5432"), g.dial("203.0.113.30:5432")
	for _, c := range []net.Conn{busy, quiet} {
		io.WriteString(c, "x")
		io.ReadFull(c, make([]byte, 1))
	}
	start := time.Now()
	for time.Since(start) < 600*time.Millisecond {
		io.WriteString(busy, "x")
		busy.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := io.ReadFull(busy, make([]byte, 1)); err != nil {
			t.Fatalf("a busy connection closed after %v: %v", time.Since(start), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !refused(t, quiet) {
		t.Error("a quiet connection stayed open past the idle timeout")
	}
}

func TestTransparentNoSNI(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name       string
		cfg        Config
		entries    []string
		served     bool
		dest, want string
	}{
		{"a name entry", Config{}, []string{"example.com"}, false, "203.0.113.10:443", reasonNoSNI},
		{"a name entry, the operator allows no SNI", Config{AllowNoSNI: true}, []string{"example.com"}, true, "", ""},
		{"an address entry", Config{}, []string{"example.com", "203.0.113.10"}, true, "", ""},
		{"a CIDR entry", Config{}, []string{"203.0.113.0/24"}, true, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := w.gateway(t, tc.cfg, tc.entries...)
			if tc.entries[0] == "example.com" {
				g.resolve("example.com")
			}
			tc2 := tls.Client(g.dial("203.0.113.10:443"), &tls.Config{InsecureSkipVerify: true})
			tc2.SetDeadline(time.Now().Add(5 * time.Second))
			err := tc2.Handshake()
			if tc.served != (err == nil) {
				t.Fatalf("TLS without SNI: handshake error %v, want served %v", err, tc.served)
			}
			if !tc.served {
				waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.dest, tc.want) })
			} else if r := g.Report(); len(r.Denied) != 0 {
				t.Errorf("denied %v, want nothing", r.Denied)
			}
		})
	}
}

func TestTransparentHTTPNoHost(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	const noHost = "GET / HTTP/1.0\r\n\r\n"
	tests := []struct {
		name    string
		cfg     Config
		entries []string
		request string
		want    string // the body served; "" when refused
		reason  string
	}{
		{"no Host, a name entry", Config{}, []string{"example.com:80"}, noHost, "", reasonNoHost},
		{"an address as Host, a name entry", Config{}, []string{"example.com:80"}, "GET / HTTP/1.1\r\nHost: 203.0.113.10\r\n\r\n", "", "HTTP Host 203.0.113.10 is an address, not an allowed name"},
		{"an address and port as Host", Config{}, []string{"example.com:80"}, "GET / HTTP/1.1\r\nHost: 203.0.113.10:80\r\n\r\n", "", "HTTP Host 203.0.113.10 is an address, not an allowed name"},
		{"an address in absolute form", Config{}, []string{"example.com:80"}, "GET http://203.0.113.10/ HTTP/1.1\r\nHost: example.com\r\n\r\n", "", "HTTP Host 203.0.113.10 is an address, not an allowed name"},
		{"an allowed name in absolute form", Config{}, []string{"example.com:80"}, "GET http://example.com/ HTTP/1.0\r\n\r\n", "hello from example.com", ""},
		{"no Host, the operator allows it", Config{AllowNoSNI: true}, []string{"example.com:80"}, noHost, "hello from 203.0.113.10:80", ""},
		{"no Host, an address entry", Config{}, []string{"203.0.113.10:80"}, noHost, "hello from 203.0.113.10:80", ""},
		{"an address as Host, a CIDR entry", Config{}, []string{"203.0.113.0/24:80"}, "GET / HTTP/1.1\r\nHost: 203.0.113.10\r\nConnection: close\r\n\r\n", "hello from 203.0.113.10", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := w.gateway(t, tc.cfg, tc.entries...)
			if tc.entries[0] == "example.com:80" {
				g.resolve("example.com")
			}
			c := g.dial("203.0.113.10:80")
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, tc.request)
			if tc.want == "" {
				if !refused(t, c) {
					t.Fatal("the request was served, want it refused")
				}
				waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), "203.0.113.10:80", tc.reason) })
				if r := g.Close(); r.BytesOut != 0 {
					t.Errorf("%d bytes sent upstream, want none", r.BytesOut)
				}
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != tc.want {
				t.Errorf("answer = %d %q, want 200 %q", resp.StatusCode, body, tc.want)
			}
			if r := g.Report(); len(r.Denied) != 0 {
				t.Errorf("denied %v, want nothing", r.Denied)
			}
		})
	}
	// On a kept-alive connection, each request needs a Host of its own.
	for _, next := range []struct{ request, reason string }{
		{"GET / HTTP/1.1\r\n\r\n", reasonNoHost},
		{noHost, reasonNoHost},
		{"GET / HTTP/1.1\r\nHost: 203.0.113.10\r\n\r\n", "HTTP Host 203.0.113.10 is an address, not an allowed name"},
	} {
		g := w.gateway(t, Config{}, "example.com:80")
		g.resolve("example.com")
		c := g.dial("203.0.113.10:80")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		var got []string
		for _, req := range []string{"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", next.request} {
			io.WriteString(c, req)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer to %q: %v", req, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, body))
		}
		want := []string{"200 hello from example.com", "403 boxer: 203.0.113.10:80 refused: " + next.reason + "\n"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("example.com, then %q on one connection = %q, want %q", next.request, got, want)
		}
		if !refused(t, c) {
			t.Error("the connection stayed open after a refused request")
		}
		c.Close()
		if r := g.Close(); !hasDenial(r, "203.0.113.10:80", next.reason) {
			t.Errorf("report = %+v, want 203.0.113.10:80 refused: %s", r, next.reason)
		}
	}
}

func TestHTTPAnyMethod(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	// A method outside the list that marks HTTP at once is HTTP all the
	// same, whatever pieces its request line comes in: servers take any
	// token, and its Host picks the site.
	tests := []struct {
		name   string
		tunnel bool
		pieces []string
		want   string // the answer: the body served, "refused" or a status
		dest   string // the denial's, "" when served
		reason string
	}{
		{"allowed Host", false, []string{"PROPFIND / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"}, "hello from example.com", "", ""},
		{"Host not allowed", false, []string{"PURGE / HTTP/1.1\r\nHost: evil.com\r\n\r\n"}, "refused", "evil.com:80", reasonNameNotAllowed},
		{"no Host", false, []string{"purge / HTTP/1.0\r\n\r\n"}, "refused", "203.0.113.10:80", reasonNoHost},
		{"in pieces", false, []string{"PROP", "FIND / HTTP/1.1\r\nHost: evil.com\r\n\r\n"}, "refused", "203.0.113.10:80", reasonLateLine},
		{"in pieces, after the method", false, []string{"PROPFIND / HT", "TP/1.1\r\nHost: evil.com\r\n\r\n"}, "refused", "203.0.113.10:80", reasonLateLine},
		{"in a tunnel", true, []string{"PROPFIND / HTTP/1.1\r\nHost: evil.com\r\n\r\n"}, "403", "evil.com:80", "HTTP Host evil.com is not the CONNECT target example.com"},
		{"in pieces in a tunnel", true, []string{"PROP", "FIND / HTTP/1.1\r\nHost: evil.com\r\n\r\n"}, "refused", "example.com:80", reasonLateLine},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := w.gateway(t, Config{}, "example.com:80")
			var c net.Conn
			if tc.tunnel {
				c = connectTunnel(t, g.proxyAddr(), "example.com:80")
			} else {
				g.resolve("example.com")
				c = g.dial("203.0.113.10:80")
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			for i, piece := range tc.pieces {
				if i > 0 {
					// Apart, as the proxy reads them.
					time.Sleep(100 * time.Millisecond)
				}
				io.WriteString(c, piece)
			}
			got := "refused"
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = string(body)
				if resp.StatusCode != 200 {
					got = strconv.Itoa(resp.StatusCode)
				}
			}
			if got != tc.want {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
			if tc.dest != "" {
				waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.dest, tc.reason) })
			} else if r := g.Report(); len(r.Denied) != 0 {
				t.Errorf("denied %v, want nothing", r.Denied)
			}
			if r := g.Close(); tc.want == "refused" && r.BytesIn != 0 {
				t.Errorf("%d bytes from upstream, want none", r.BytesIn)
			}
		})
	}
	// A short command that is no request line is spliced at once, not
	// held for a line end that may never come.
	g := w.gateway(t, Config{}, "db.example.com:5432")
	g.resolve("db.example.com")
	c := g.dial("203.0.113.30:5432")
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	for _, piece := range []string{"PING", " now", "\r\n"} {
		io.WriteString(c, piece)
		buf := make([]byte, len(piece))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != piece {
			t.Fatalf("echo of %q = %q, %v", piece, buf, err)
		}
	}
}

func TestTunnelServerName(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	tests := []struct {
		name    string
		cfg     Config
		entries []string
		dest    string // the CONNECT target
		sni     string // "": none
		refused string // the denial's destination, "" when served
		reason  string
	}{
		{"the target's name", Config{}, []string{"example.com"}, "example.com:443", "example.com", "", ""},
		{"another name", Config{}, []string{"example.com"}, "example.com:443", "evil.com", "evil.com:443", "TLS server name evil.com is not the CONNECT target example.com"},
		{"another allowed name", Config{}, []string{"example.com", "www.example.com"}, "example.com:443", "www.example.com", "www.example.com:443", "TLS server name www.example.com is not the CONNECT target example.com"},
		{"no name", Config{}, []string{"example.com"}, "example.com:443", "", "example.com:443", reasonNoSNI},
		{"no name, the operator allows it", Config{AllowNoSNI: true}, []string{"example.com"}, "example.com:443", "", "", ""},
		{"an address target", Config{}, []string{"203.0.113.10"}, "203.0.113.10:443", "evil.com", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := w.gateway(t, tc.cfg, tc.entries...)
			c := connectTunnel(t, g.proxyAddr(), tc.dest)
			cfg := &tls.Config{ServerName: tc.sni, RootCAs: w.roots}
			if tc.sni == "" || tc.sni == "evil.com" {
				// The test server's certificate names example.com alone.
				cfg.InsecureSkipVerify = true
			}
			tc2 := tls.Client(c, cfg)
			tc2.SetDeadline(time.Now().Add(5 * time.Second))
			err := tc2.Handshake()
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("TLS in the tunnel: %v, want it served", err)
				}
				if r := g.Report(); len(r.Denied) != 0 {
					t.Errorf("denied %v, want nothing", r.Denied)
				}
				return
			}
			if err == nil {
				t.Fatal("TLS in the tunnel worked, want it refused")
			}
			waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.refused, tc.reason) })
			if r := g.Close(); r.BytesOut != 0 {
				t.Errorf("%d bytes sent upstream, want none", r.BytesOut)
			}
		})
	}
}

func TestTunnelHTTPHost(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "example.com:80", "www.example.com:80")
	c := connectTunnel(t, g.proxyAddr(), "example.com:80")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	for _, host := range []string{"example.com", "EXAMPLE.com:80", "www.example.com", "example.com"} {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer for %s: %v", host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want, wantStatus := "hello from "+host, 200
		if host == "www.example.com" {
			want, wantStatus = "boxer: www.example.com:80 refused: HTTP Host www.example.com is not the CONNECT target example.com\n", 403
		}
		if resp.StatusCode != wantStatus || string(body) != want {
			t.Errorf("GET Host %s in a tunnel to example.com:80 = %d %q, want %d %q", host, resp.StatusCode, body, wantStatus, want)
		}
		if resp.StatusCode != 200 {
			break
		}
	}
	if !refused(t, c) {
		t.Error("the tunnel stayed open after a refused request")
	}
	// HTTP/1.0 without a Host is sent as for the target, not the
	// server's default site.
	c = connectTunnel(t, g.proxyAddr(), "example.com:80")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to HTTP/1.0: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello from example.com" {
		t.Errorf("HTTP/1.0 without Host = %d %q, want 200 hello from example.com", resp.StatusCode, body)
	}
	r := g.Close()
	if r.Connections != 2 || !hasDenial(r, "www.example.com:80", "HTTP Host www.example.com is not the CONNECT target example.com") {
		t.Errorf("report = %+v, want 2 connections (one a tunnel) and www.example.com:80 refused", r)
	}
}

func TestLateFirstBytes(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	peek := func(g *Gateway) { g.peek = 50 * time.Millisecond }
	tests := []struct {
		name    string
		entries []string
		tunnel  bool
		first   string // TLS with SNI evil.com if "tls"
		served  bool
		dest    string
	}{
		{"TLS, transparent", []string{"example.com"}, false, "tls", false, "203.0.113.10:443"},
		{"TLS in a tunnel", []string{"example.com"}, true, "tls", false, "example.com:443"},
		{"HTTP after blank lines, transparent", []string{"example.com"}, false, "\r\nGET / HTTP/1.1\r\nHost: evil.com\r\n\r\n", false, "203.0.113.10:443"},
		{"HTTP in a tunnel", []string{"example.com"}, true, "GET / HTTP/1.1\r\nHost: evil.com\r\n\r\n", false, "example.com:443"},
		{"TLS to an address entry", []string{"203.0.113.10"}, false, "tls", true, ""},
		{"an SSLv2 hello, transparent", []string{"example.com"}, false, string(sslv2Hello), false, "203.0.113.10:443"},
		{"an SSLv2 hello in a tunnel", []string{"example.com"}, true, string(sslv2Hello), false, "example.com:443"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, Config{Policy: mustPolicy(t, tc.entries...), Dial: w.dial}, peek)
			var c net.Conn
			if tc.tunnel {
				c = connectTunnel(t, g.proxyAddr(), "example.com:443")
			} else {
				if tc.entries[0] == "example.com" {
					g.resolve("example.com")
				}
				c = g.dial("203.0.113.10:443")
			}
			// Past the proxy's wait for the first bytes.
			time.Sleep(200 * time.Millisecond)
			var served bool
			if tc.first == "tls" {
				tc2 := tls.Client(c, &tls.Config{ServerName: "evil.com", InsecureSkipVerify: true})
				tc2.SetDeadline(time.Now().Add(5 * time.Second))
				served = tc2.Handshake() == nil
			} else {
				io.WriteString(c, tc.first)
				served = !refused(t, c)
			}
			if served != tc.served {
				t.Fatalf("served = %v, want %v", served, tc.served)
			}
			if !tc.served {
				waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.dest, reasonLate) })
			}
		})
	}
}

func TestRequestLine(t *testing.T) {
	tests := []struct {
		first string
		want  int
	}{
		{"GET ", lineHTTP},
		{"\r\n\r\nPOST ", lineHTTP},
		{"PROPFIND / HTTP/1.1\r\n", lineHTTP},
		{"purge  /x \thttp/", lineHTTP},
		{"M-SEARCH * HTTP/1.1", lineHTTP},
		{"AVERYLONGMETHODNAME /path HTTP/1.0", lineHTTP},
		{"PRI * HTTP/2.0\r\n", lineOther},
		{"INVITE sip:bob@example.com SIP/2.0\r\n", lineOther},
		{"EHLO example.com\r\n", lineOther},
		{"ping 203.0.113.30:5432", lineMaybe},
		{"*1\r\n$4\r\nPING\r\n", lineOther},
		{"SSH-2.0-OpenSSH_9.6\r\n", lineOther},
		{"\x00\x00\x00\x08\x04\xd2\x16\x2f", lineOther},
		{"PROPFIND", lineMaybe},
	}
	for _, tc := range tests {
		var l requestLine
		got := lineMaybe
		for i := 0; i < len(tc.first) && got == lineMaybe; i++ {
			got = l.add(tc.first[i])
		}
		if got != tc.want {
			t.Errorf("requestLine of %q = %d, want %d", tc.first, got, tc.want)
		}
	}
}
