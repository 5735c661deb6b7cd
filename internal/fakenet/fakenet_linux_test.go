package fakenet

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/nlretry"
	"github.com/miekg/dns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func start(t *testing.T) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	n, err := Start(t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

// exchange asks the namespace's DNS server one question over network.
func exchange(t *testing.T, n *Net, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := n.DialContext(ctx, network, n.DNS)
	if err != nil {
		t.Fatalf("dialling DNS over %s: %v", network, err)
	}
	defer c.Close()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	client := &dns.Client{Net: network}
	r, _, err := client.ExchangeWithConnContext(ctx, m, &dns.Conn{Conn: c})
	if err != nil {
		t.Fatalf("asking %s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return r
}

func TestDNS(t *testing.T) {
	n := start(t)
	tests := []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"web.test", dns.TypeA, dns.RcodeSuccess, []string{WebAddr}},
		{"WEB.Test", dns.TypeA, dns.RcodeSuccess, []string{WebAddr}},
		{"api.web.test", dns.TypeA, dns.RcodeSuccess, []string{WebAddr}},
		{"a.b.web.test", dns.TypeA, dns.RcodeSuccess, []string{WebAddr}},
		{"web.test", dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"other.test", dns.TypeA, dns.RcodeSuccess, []string{OtherAddr}},
		{"pypi.test", dns.TypeA, dns.RcodeSuccess, []string{PyPIAddr}},
		{"npm.test", dns.TypeA, dns.RcodeSuccess, []string{NPMAddr}},
		{"badcert.test", dns.TypeA, dns.RcodeSuccess, []string{BadCertAddr}},
		{"loop.test", dns.TypeA, dns.RcodeSuccess, []string{LoopAddr}},
		{"private.test", dns.TypeA, dns.RcodeSuccess, []string{PrivateAddr}},
		{"meta.test", dns.TypeA, dns.RcodeSuccess, []string{MetaAddr}},
		{"v6.test", dns.TypeA, dns.RcodeSuccess, []string{WebAddr}},
		{"v6.test", dns.TypeAAAA, dns.RcodeSuccess, []string{V6Addr}},
		{"v6.test", dns.TypeMX, dns.RcodeSuccess, nil},
		{"notweb.test", dns.TypeA, dns.RcodeNameError, nil},
		{"nope.test", dns.TypeA, dns.RcodeNameError, nil},
		{"example.com", dns.TypeA, dns.RcodeNameError, nil},
		{"test", dns.TypeA, dns.RcodeNameError, nil},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range tests {
			t.Run(network+"/"+tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
				r := exchange(t, n, network, tc.name, tc.qtype)
				if r.Rcode != tc.rcode {
					t.Errorf("rcode = %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
				}
				var got []string
				for _, rr := range r.Answer {
					switch rr := rr.(type) {
					case *dns.A:
						got = append(got, rr.A.String())
					case *dns.AAAA:
						got = append(got, rr.AAAA.String())
					default:
						t.Errorf("unexpected answer %v", rr)
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("answer = %v, want %v", got, tc.want)
				}
			})
		}
	}

	countTests := []struct {
		suffix string
		want   int
	}{
		// web.test twice, WEB.Test, api.web.test, a.b.web.test: five per network.
		{"web.test", 10},
		{"WEB.TEST.", 10},
		{"a.b.web.test", 2},
		{".web.test", 4},
		{"b.web.test", 2},
		{"notweb.test", 2},
		{"eb.test", 0},
		{"v6.test", 6},
		{"example.com", 2},
		{"unasked.test", 0},
		{"", 2 * len(tests)},
	}
	for _, tc := range countTests {
		if got := n.Queries(tc.suffix); got != tc.want {
			t.Errorf("Queries(%q) = %d, want %d", tc.suffix, got, tc.want)
		}
	}
	if got, want := n.Hits(n.DNS), len(tests); got != want {
		t.Errorf("Hits(%s) = %d, want %d (one per TCP question)", n.DNS, got, want)
	}
}

func TestResolver(t *testing.T) {
	n := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := n.Resolver().LookupHost(ctx, "x.web.test")
	if err != nil {
		t.Fatalf("LookupHost: %v", err)
	}
	if !slices.Equal(got, []string{WebAddr}) {
		t.Errorf("LookupHost(x.web.test) = %v, want [%s]", got, WebAddr)
	}
	_, err = n.Resolver().LookupHost(ctx, "missing.test")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("LookupHost(missing.test) error = %v, want not found", err)
	}
	if got := n.Queries("x.web.test"); got < 1 {
		t.Errorf("Queries(x.web.test) = %d, want at least 1", got)
	}
}

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, body
}

func TestHTTP(t *testing.T) {
	n := start(t)
	c := n.HTTPClient()
	defer c.CloseIdleConnections()
	tests := []struct {
		url   string
		local string
		want  string
	}{
		{"http://web.test/", "203.0.113.10:80", "hello from web.test on 203.0.113.10:80\n"},
		{"https://web.test/", "203.0.113.10:443", "hello from web.test on 203.0.113.10:443\n"},
		{"https://api.web.test:8443/x", "203.0.113.10:8443", "hello from api.web.test:8443 on 203.0.113.10:8443\n"},
		{"http://other.test/", "203.0.113.11:80", "hello from other.test on 203.0.113.11:80\n"},
		{"https://other.test/", "203.0.113.11:443", "hello from other.test on 203.0.113.11:443\n"},
		{"https://pypi.test/elsewhere", "203.0.113.12:443", "hello from pypi.test on 203.0.113.12:443\n"},
		{"https://npm.test/", "203.0.113.13:443", "hello from npm.test on 203.0.113.13:443\n"},
		{"http://badcert.test/", "203.0.113.14:80", "hello from badcert.test on 203.0.113.14:80\n"},
		{"http://loop.test/", "127.0.0.1:80", "hello from loop.test on 127.0.0.1:80\n"},
		{"http://private.test/", "10.0.0.5:80", "hello from private.test on 10.0.0.5:80\n"},
		{"http://meta.test/latest/meta-data/", "169.254.169.254:80", "hello from meta.test on 169.254.169.254:80\n"},
		{"http://[2001:db8::10]/", "[2001:db8::10]:80", "hello from [2001:db8::10] on [2001:db8::10]:80\n"},
		{"https://203.0.113.10/", "203.0.113.10:443", "hello from 203.0.113.10 on 203.0.113.10:443\n"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			before := n.Hits(tc.local)
			// A fresh connection each time, so that each request is a hit.
			c.CloseIdleConnections()
			status, body := get(t, c, tc.url)
			if status != http.StatusOK {
				t.Errorf("status = %d, want 200", status)
			}
			if string(body) != tc.want {
				t.Errorf("body = %q, want %q", body, tc.want)
			}
			if got := n.Hits(tc.local); got != before+1 {
				t.Errorf("Hits(%s) = %d, want %d", tc.local, got, before+1)
			}
		})
	}
	if got := n.Hits("203.0.113.11:7000"); got != 0 {
		t.Errorf("Hits(other echo) = %d, want 0", got)
	}
	if got := n.Hits("not an address"); got != 0 {
		t.Errorf("Hits(not an address) = %d, want 0", got)
	}

	// Without the CA, the certificate is refused.
	plain := &http.Client{Transport: &http.Transport{DialContext: n.DialContext}}
	defer plain.CloseIdleConnections()
	_, err := plain.Get("https://web.test/")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("GET without the CA: error = %v, want unknown authority", err)
	}
}

func TestSharedHost(t *testing.T) {
	n := start(t)
	c := n.HTTPClient()
	defer c.CloseIdleConnections()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(n.CAPEM)
	tests := []struct {
		name       string
		addr       string // the shared host's port
		sni, host  string // "": none
		status     int
		want, site string
	}{
		{"cdn.test over TLS", "203.0.113.15:443", "cdn.test", "cdn.test", 200, "site cdn.test on 203.0.113.15:443\n", CDNName},
		{"evil.test over TLS", "203.0.113.15:443", "evil.test", "evil.test", 200, "site evil.test on 203.0.113.15:443\n", EvilName},
		{"TLS without SNI", "203.0.113.15:443", "", "", 200, "site evil.test on 203.0.113.15:443\n", EvilName},
		{"TLS without SNI, Host cdn.test", "203.0.113.15:443", "", "cdn.test", 200, "site cdn.test on 203.0.113.15:443\n", CDNName},
		{"an SNI and another Host", "203.0.113.15:443", "cdn.test", "evil.test", 421, "misdirected: this connection is for cdn.test\n", ""},
		{"HTTP for cdn.test", "203.0.113.15:80", "", "cdn.test:80", 200, "site cdn.test on 203.0.113.15:80\n", CDNName},
		{"HTTP for evil.test", "203.0.113.15:80", "", "evil.test", 200, "site evil.test on 203.0.113.15:80\n", EvilName},
		{"HTTP without Host", "203.0.113.15:80", "", "", 200, "site evil.test on 203.0.113.15:80\n", EvilName},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := n.Served(tc.site)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := n.DialContext(ctx, "tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if strings.HasSuffix(tc.addr, ":443") {
				tc2 := tls.Client(conn, &tls.Config{ServerName: tc.sni, RootCAs: pool, InsecureSkipVerify: tc.sni == ""})
				if err := tc2.Handshake(); err != nil {
					t.Fatalf("TLS handshake: %v", err)
				}
				conn = tc2
			}
			req := "GET / HTTP/1.0\r\n\r\n"
			if tc.host != "" {
				req = "GET / HTTP/1.1\r\nHost: " + tc.host + "\r\nConnection: close\r\n\r\n"
			}
			io.WriteString(conn, req)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(body) != tc.want {
				t.Errorf("answer = %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.want)
			}
			if tc.site != "" && n.Served(tc.site) != before+1 {
				t.Errorf("Served(%s) = %d, want %d", tc.site, n.Served(tc.site), before+1)
			}
		})
	}
	// Both names resolve to the shared address.
	for _, name := range []string{CDNName, EvilName} {
		if r := exchange(t, n, "udp", name, dns.TypeA); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != CDNAddr {
			t.Errorf("%s A = %v, want %s", name, r.Answer, CDNAddr)
		}
	}
}

func TestBadCert(t *testing.T) {
	n := start(t)
	c := n.HTTPClient()
	defer c.CloseIdleConnections()
	_, err := c.Get("https://badcert.test/")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("GET https://badcert.test/ trusting the test CA: error = %v, want unknown authority", err)
	}
	cert := unknown.Cert
	if !slices.Equal(cert.DNSNames, []string{BadCertName}) || cert.Issuer.CommonName != BadCertName {
		t.Errorf("certificate for %v issued by %q, want for [%s], self-signed", cert.DNSNames, cert.Issuer.CommonName, BadCertName)
	}
	if got := n.Hits(hostPort(BadCertAddr, HTTPSPort)); got != 1 {
		t.Errorf("Hits(badcert.test:443) = %d, want 1", got)
	}

	// The test CA's certificate is not valid for badcert.test.
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	trusting := &http.Client{Transport: &http.Transport{
		DialContext:     n.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	defer trusting.CloseIdleConnections()
	status, body := get(t, trusting, "https://badcert.test/")
	if want := "hello from badcert.test on 203.0.113.14:443\n"; status != http.StatusOK || string(body) != want {
		t.Errorf("GET trusting its certificate = %d %q, want 200 %q", status, body, want)
	}
	if _, err := c.Get("https://web.test/"); err != nil {
		t.Errorf("GET https://web.test/: %v", err)
	}
}

func TestHeaders(t *testing.T) {
	n := start(t)
	c := n.HTTPClient()
	defer c.CloseIdleConnections()
	for _, u := range []string{"https://web.test/headers", "https://api.web.test:8443/headers"} {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("X-Api-Key", "k3y")
		req.Header.Add("X-Other", "a")
		req.Header.Add("X-Other", "b")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
			t.Errorf("GET %s = %d %s, want 200 application/json", u, resp.StatusCode, ct)
		}
		if bytes.Contains(body, []byte("s3cret")) || bytes.Contains(body, []byte("k3y")) {
			t.Errorf("GET %s echoed a hidden header: %s", u, body)
		}
		var echo map[string]any
		if err := json.Unmarshal(body, &echo); err != nil {
			t.Fatalf("decoding %s: %v", body, err)
		}
		host := strings.TrimPrefix(u, "https://")
		host, _, _ = strings.Cut(host, "/")
		if echo["_host"] != host {
			t.Errorf("_host = %v, want %s", echo["_host"], host)
		}
		if got := fmt.Sprint(echo["X-Other"]); got != "[a b]" {
			t.Errorf("X-Other = %s, want [a b]", got)
		}
		for _, name := range []string{"Authorization", "X-Api-Key"} {
			if v, ok := echo[name]; ok {
				t.Errorf("%s echoed as %v, want it hidden", name, v)
			}
		}
	}
	get(t, c, "https://web.test/other")

	got := n.Received("/headers")
	if len(got) != 2 {
		t.Fatalf("Received(/headers) = %d requests, want 2", len(got))
	}
	for i, h := range got {
		if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Api-Key") != "k3y" || len(h.Values("X-Other")) != 2 {
			t.Errorf("Received(/headers)[%d] = %v, want every header sent", i, h)
		}
	}
	got[0].Set("Authorization", "changed")
	if h := n.Received("/headers")[0]; h.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("Received returned the log itself, not a copy: %v", h)
	}
	if got := n.Received("/other"); len(got) != 1 {
		t.Errorf("Received(/other) = %d requests, want 1", len(got))
	}
	if got := n.Received("/never"); got != nil {
		t.Errorf("Received(/never) = %v, want none", got)
	}
	// Other hosts' HTTPS servers record nothing and answer hello.
	status, body := get(t, c, "https://other.test/headers")
	if want := "hello from other.test on 203.0.113.11:443\n"; status != http.StatusOK || string(body) != want {
		t.Errorf("GET https://other.test/headers = %d %q, want 200 %q", status, body, want)
	}
	if got := n.Received("/headers"); len(got) != 2 {
		t.Errorf("Received(/headers) = %d requests after other.test's, want 2", len(got))
	}
}

func TestEcho(t *testing.T) {
	n := start(t)
	for _, addr := range []string{"web.test:7000", "other.test:7000", "loop.test:7000", "private.test:7000"} {
		t.Run(addr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := n.DialContext(ctx, "tcp", addr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			msg := []byte("ping " + addr + "\n")
			if _, err := c.Write(msg); err != nil {
				t.Fatalf("write: %v", err)
			}
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatalf("read: %v", err)
			}
			if !bytes.Equal(got, msg) {
				t.Errorf("echo = %q, want %q", got, msg)
			}
			local := c.RemoteAddr().String()
			if got := n.Hits(local); got != 1 {
				t.Errorf("Hits(%s) = %d, want 1", local, got)
			}
		})
	}
}

// TestNoWayOut checks that the namespace has no route off the machine: a
// connection to any address not in the zone fails at once.
func TestNoWayOut(t *testing.T) {
	n := start(t)
	for _, addr := range []string{"192.0.2.1:80", "8.8.8.8:53", "[2001:4860:4860::8888]:443"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := n.DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("dial %s: connected, want network unreachable", addr)
			continue
		}
		if !errors.Is(err, unix.ENETUNREACH) {
			t.Errorf("dial %s: %v, want network unreachable", addr, err)
		}
	}
}

var hrefRE = regexp.MustCompile(`href="([^"]+)"`)

func TestWheel(t *testing.T) {
	n := start(t)
	c := n.HTTPClient()
	defer c.CloseIdleConnections()

	status, root := get(t, c, "https://pypi.test/simple/")
	if status != http.StatusOK || !strings.Contains(string(root), `href="/simple/boxertest/"`) {
		t.Errorf("/simple/ = %d %q, want a link to boxertest", status, root)
	}
	status, page := get(t, c, "https://pypi.test/simple/boxertest/")
	if status != http.StatusOK {
		t.Fatalf("/simple/boxertest/ status = %d, want 200", status)
	}
	m := hrefRE.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no link in %q", page)
	}
	url, fragment, _ := strings.Cut(string(m[1]), "#sha256=")
	if want := "https://pypi.test/packages/" + WheelName; url != want {
		t.Errorf("link = %q, want %q", url, want)
	}
	status, wheel := get(t, c, url)
	if status != http.StatusOK {
		t.Fatalf("wheel status = %d, want 200", status)
	}
	if sum := sha256.Sum256(wheel); hex.EncodeToString(sum[:]) != fragment {
		t.Errorf("wheel sha256 = %x, link says %s", sum, fragment)
	}

	zr, err := zip.NewReader(bytes.NewReader(wheel), int64(len(wheel)))
	if err != nil {
		t.Fatalf("opening wheel: %v", err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("opening %s: %v", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", f.Name, err)
		}
		files[f.Name] = string(b)
	}
	if got := files["boxertest/__init__.py"]; got != "VALUE = 42\n" {
		t.Errorf("__init__.py = %q, want %q", got, "VALUE = 42\n")
	}
	record := "boxertest-1.0.dist-info/RECORD"
	listed := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(files[record]))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if len(fields) != 3 {
			t.Fatalf("RECORD line %q: want 3 fields", sc.Text())
		}
		name, hash, size := fields[0], fields[1], fields[2]
		listed[name] = true
		if name == record {
			if hash != "" || size != "" {
				t.Errorf("RECORD lists itself as %q, want %q", sc.Text(), record+",,")
			}
			continue
		}
		body, ok := files[name]
		if !ok {
			t.Errorf("RECORD lists %s, not in the wheel", name)
			continue
		}
		sum := sha256.Sum256([]byte(body))
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); hash != want {
			t.Errorf("RECORD hash of %s = %s, want %s", name, hash, want)
		}
		if want := strconv.Itoa(len(body)); size != want {
			t.Errorf("RECORD size of %s = %s, want %s", name, size, want)
		}
	}
	for name := range files {
		if !listed[name] {
			t.Errorf("%s is in the wheel but not in RECORD", name)
		}
	}
}

func TestNPM(t *testing.T) {
	n := start(t)
	c := n.HTTPClient()
	defer c.CloseIdleConnections()

	status, body := get(t, c, "https://npm.test/boxer-test-pkg")
	if status != http.StatusOK {
		t.Fatalf("packument status = %d, want 200", status)
	}
	var doc struct {
		Name     string            `json:"name"`
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Main    string `json:"main"`
			Dist    struct {
				Tarball   string `json:"tarball"`
				Shasum    string `json:"shasum"`
				Integrity string `json:"integrity"`
			} `json:"dist"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("decoding packument: %v", err)
	}
	if doc.Name != NPMPackage || doc.DistTags["latest"] != NPMVersion {
		t.Errorf("packument name %q latest %q, want %q %q", doc.Name, doc.DistTags["latest"], NPMPackage, NPMVersion)
	}
	v, ok := doc.Versions[NPMVersion]
	if !ok {
		t.Fatalf("packument has no version %s", NPMVersion)
	}
	if v.Name != NPMPackage || v.Version != NPMVersion || v.Main != "index.js" {
		t.Errorf("version = %+v", v)
	}
	if want := "https://npm.test/boxer-test-pkg/-/boxer-test-pkg-1.0.0.tgz"; v.Dist.Tarball != want {
		t.Errorf("tarball = %q, want %q", v.Dist.Tarball, want)
	}
	status, tgz := get(t, c, v.Dist.Tarball)
	if status != http.StatusOK {
		t.Fatalf("tarball status = %d, want 200", status)
	}
	if sum := sha1.Sum(tgz); hex.EncodeToString(sum[:]) != v.Dist.Shasum {
		t.Errorf("tarball sha1 = %x, shasum says %s", sum, v.Dist.Shasum)
	}
	if sum := sha512.Sum512(tgz); "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) != v.Dist.Integrity {
		t.Errorf("tarball sha512 = %x, integrity says %s", sum, v.Dist.Integrity)
	}

	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading tarball: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", hdr.Name, err)
		}
		files[hdr.Name] = string(b)
	}
	if got := files["package/index.js"]; got != "module.exports = 42;\n" {
		t.Errorf("index.js = %q", got)
	}
	var manifest map[string]string
	if err := json.Unmarshal([]byte(files["package/package.json"]), &manifest); err != nil {
		t.Fatalf("decoding package.json: %v", err)
	}
	if manifest["name"] != NPMPackage || manifest["version"] != NPMVersion || manifest["main"] != "index.js" {
		t.Errorf("package.json = %v", manifest)
	}
}

func TestTrustEnv(t *testing.T) {
	var n Net
	want := []string{
		"SSL_CERT_FILE=/ca.pem",
		"REQUESTS_CA_BUNDLE=/ca.pem",
		"PIP_CERT=/ca.pem",
		"CURL_CA_BUNDLE=/ca.pem",
		"NODE_EXTRA_CA_CERTS=/ca.pem",
	}
	if got := n.TrustEnv("/ca.pem"); !slices.Equal(got, want) {
		t.Errorf("TrustEnv = %v, want %v", got, want)
	}
}

func TestStartFails(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	dir := t.TempDir()
	taken := filepath.Join(dir, "netns")
	if err := os.WriteFile(taken, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := Start(dir); err == nil {
		n.Close()
		t.Fatalf("Start over an existing %s: no error", taken)
	}
	if b, err := os.ReadFile(taken); err != nil || string(b) != "mine" {
		t.Errorf("%s after a failed Start = %q, %v; want it untouched", taken, b, err)
	}
	if _, err := Start(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("Start in a missing directory: no error")
	}
}

// TestTwoNets checks that two fake internets run side by side, each
// counting its own.
func TestTwoNets(t *testing.T) {
	a, b := start(t), start(t)
	c := a.HTTPClient()
	defer c.CloseIdleConnections()
	get(t, c, "http://web.test/")
	web := hostPort(WebAddr, HTTPPort)
	if got := a.Hits(web); got != 1 {
		t.Errorf("first Hits(%s) = %d, want 1", web, got)
	}
	if got := b.Hits(web); got != 0 {
		t.Errorf("second Hits(%s) = %d, want 0", web, got)
	}
	if got := b.Queries(""); got != 0 {
		t.Errorf("second Queries = %d, want 0", got)
	}
}

// TestClose checks that Close leaves nothing behind: no mount, no file, no
// goroutine, and the host's links and routes as they were.
func TestClose(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	links, routes := hostNetwork(t)
	goroutines := runtime.NumGoroutine()

	dir := t.TempDir()
	n, err := Start(dir)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !mounted(t, n.Netns) {
		t.Errorf("%s is not in mountinfo after Start", n.Netns)
	}
	if b, err := os.ReadFile(n.CAFile); err != nil || !bytes.Equal(b, n.CAPEM) {
		t.Errorf("CA file = %q, %v; want CAPEM", b, err)
	}
	// Leave connections open: Close must cut them.
	c := n.HTTPClient()
	get(t, c, "https://web.test/")
	echo, err := n.DialContext(context.Background(), "tcp", hostPort(WebAddr, EchoPort))
	if err != nil {
		t.Fatalf("dialling echo: %v", err)
	}
	defer echo.Close()
	exchange(t, n, "udp", "web.test", dns.TypeA)

	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	c.CloseIdleConnections()
	echo.Close()

	if mounted(t, n.Netns) {
		t.Errorf("%s is still in mountinfo after Close", n.Netns)
	}
	for _, p := range []string{n.Netns, n.CAFile} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat %s after Close: %v, want not exist", p, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines = %d after Close, want at most %d:\n%s", got, goroutines, buf[:runtime.Stack(buf, true)])
	}
	gotLinks, gotRoutes := hostNetwork(t)
	if !slices.Equal(gotLinks, links) {
		t.Errorf("host links = %v after, want %v", gotLinks, links)
	}
	if !slices.Equal(gotRoutes, routes) {
		t.Errorf("host routes = %v after, want %v", gotRoutes, routes)
	}
}

// hostNetwork lists the host's links and routes as strings to compare.
func hostNetwork(t *testing.T) (links, routes []string) {
	t.Helper()
	ls, err := nlretry.Dump(netlink.LinkList)
	if err != nil {
		t.Fatalf("listing links: %v", err)
	}
	for _, l := range ls {
		a := l.Attrs()
		links = append(links, fmt.Sprintf("%d %s %s %s", a.Index, a.Name, l.Type(), a.Flags))
	}
	rs, err := nlretry.Dump(func() ([]netlink.Route, error) { return netlink.RouteList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		t.Fatalf("listing routes: %v", err)
	}
	for _, r := range rs {
		routes = append(routes, r.String())
	}
	slices.Sort(links)
	slices.Sort(routes)
	return links, routes
}

// mounted reports whether path is a mount point in /proc/self/mountinfo.
func mounted(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("reading mountinfo: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		// Field 5 is the mount point (spaces in it are escaped as \040).
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
