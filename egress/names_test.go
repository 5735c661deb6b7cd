package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Look-alike names: each folds into an allowed name under Unicode's rules
// (strings.ToLower, strings.EqualFold), never under DNS's.
const (
	// evilDotted is evil.com with U+0130 (İ, capital I with a dot) for i.
	evilDotted = "ev\u0130l.com"
	// keyKelvin is key.example.com with U+212A (the Kelvin sign) for k.
	keyKelvin = "\u212Aey.example.com"
)

func TestHostName(t *testing.T) {
	tests := []struct {
		host, name, reason string
	}{
		{"example.com", "example.com", ""},
		{"Example.COM.", "example.com", ""},
		{"example.com:8443", "example.com", ""},
		{"203.0.113.10:80", "", ""},
		{"[2001:db8::1]:443", "", ""},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", ""},
		{"XN--BCHER-KVA.example", "xn--bcher-kva.example", ""},
		{evilDotted, `ev\u0130l.com`, reasonNotASCII},
		{keyKelvin + ":443", `\u212aey.example.com`, reasonNotASCII},
		{"bücher.example", `b\u00fccher.example`, reasonNotASCII},
		{"exa mple.com", "exa mple.com", reasonNotASCII},
		{"example.com\x00", `example.com\x00`, reasonNotASCII},
		{"xn--zz.example", "xn--zz.example", reasonBadALabel},
		{"xn--.example", "xn--.example", reasonBadALabel},
		{"xn--pyp-hua.test", "xn--pyp-hua.test", reasonBadALabel},
	}
	for _, tc := range tests {
		name, reason := hostName(tc.host)
		if name != tc.name || reason != tc.reason {
			t.Errorf("hostName(%q) = %q, %q, want %q, %q", tc.host, name, reason, tc.name, tc.reason)
		}
	}
}

func TestNamesFoldASCIIOnly(t *testing.T) {
	p := mustPolicy(t, "evil.com", "key.example.com", "*.example.org")
	for _, name := range []string{evilDotted, keyKelvin, "\u212A.example.org", "EVIL.com."} {
		want := name == "EVIL.com."
		if got := p.NameKnown(name); got != want {
			t.Errorf("NameKnown(%q) = %v, want %v", name, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"Authorization", "authorization", true},
		{"k", "\u212A", false},
		{"i", "\u0130", false},
		{"abc", "abd", false},
	} {
		if got := equalFoldASCII(c.a, c.b); got != c.want {
			t.Errorf("equalFoldASCII(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestParseRuleNotASCII(t *testing.T) {
	tests := []struct {
		entry, want string // want: a part of the error, "" for none
	}{
		{"pyp\u0130.test", "a host name must be ASCII"},
		{keyKelvin, "a host name must be ASCII"},
		{"bücher.example", "as in xn--bcher-kva.example"},
		{"*.bücher.example", "a host name must be ASCII"},
		{"xn--zz.example", "label xn--zz of the host name is not a valid IDNA A-label"},
		{"xn--bcher-kva.example", ""},
		{"*.XN--BCHER-KVA.example:443", ""},
	}
	for _, tc := range tests {
		_, err := ParseRule(tc.entry)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ParseRule(%q) = %v, want no error", tc.entry, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseRule(%q) = %v, want an error with %q", tc.entry, err, tc.want)
		}
	}
}

// TestTransparentNotASCII: TLS naming, or plain HTTP asking for, a
// look-alike of an allowed name is refused and recorded, escaped, before a
// byte goes upstream.
func TestTransparentNotASCII(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	for _, name := range []string{evilDotted, keyKelvin} {
		allowed := strings.ToLower(name) // Unicode's folding: what let it through
		recorded := printable(name)
		t.Run(recorded+"/tls", func(t *testing.T) {
			g := w.gateway(t, Config{}, allowed)
			g.resolve(allowed)
			tc := tls.Client(g.dial("203.0.113.10:443"), &tls.Config{ServerName: name, InsecureSkipVerify: true})
			tc.SetDeadline(time.Now().Add(5 * time.Second))
			if err := tc.Handshake(); err == nil {
				t.Fatal("TLS naming a look-alike was served, want it refused")
			}
			waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), recorded+":443", reasonNotASCII) })
			if r := g.Close(); r.BytesOut != 0 {
				t.Errorf("%d bytes sent upstream, want none", r.BytesOut)
			}
		})
		t.Run(recorded+"/http", func(t *testing.T) {
			g := w.gateway(t, Config{}, allowed+":80")
			g.resolve(allowed)
			c := g.dial("203.0.113.10:80")
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", name)
			if !refused(t, c) {
				t.Fatal("plain HTTP for a look-alike was served, want it refused")
			}
			waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), recorded+":80", reasonNotASCII) })
			if r := g.Close(); r.BytesOut != 0 {
				t.Errorf("%d bytes sent upstream, want none", r.BytesOut)
			}
		})
	}
}

// TestExplicitNotASCII: the proxy refuses a look-alike as a CONNECT target,
// as the server name or Host inside a tunnel to the allowed name, and in an
// absolute-form URL (which Go's client would send on as its IDNA form).
func TestExplicitNotASCII(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	g := w.gateway(t, Config{}, "evil.com", "evil.com:80")
	ask := func(request string) string {
		c, err := net.Dial("tcp", g.proxyAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, request)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", request, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return fmt.Sprintf("%d %s", resp.StatusCode, body)
	}
	for _, c := range []struct{ request, want string }{
		{"CONNECT " + evilDotted + ":443 HTTP/1.1\r\nHost: evil.com:443\r\n\r\n", `403 boxer: ev\u0130l.com:443 refused: ` + reasonNotASCII + "\n"},
		{"GET http://" + evilDotted + "/ HTTP/1.1\r\nHost: evil.com\r\n\r\n", `403 boxer: ev\u0130l.com:80 refused: ` + reasonNotASCII + "\n"},
	} {
		if got := ask(c.request); got != c.want {
			t.Errorf("%q = %q, want %q", c.request, got, c.want)
		}
	}

	tc := tls.Client(connectTunnel(t, g.proxyAddr(), "evil.com:443"), &tls.Config{ServerName: evilDotted, InsecureSkipVerify: true})
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Error("TLS naming a look-alike in a tunnel to evil.com was served, want it refused")
	}
	tc.Close()

	c := connectTunnel(t, g.proxyAddr(), "evil.com:80")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", evilDotted)
	if !refused(t, c) {
		t.Error("a look-alike Host in a tunnel to evil.com:80 was served, want it refused")
	}
	c.Close()

	waitFor(t, "the tunnels' denials", func() bool {
		r := g.Report()
		return hasDenial(r, `ev\u0130l.com:443`, reasonNotASCII) && hasDenial(r, `ev\u0130l.com:80`, reasonNotASCII)
	})
	if r := g.Close(); r.BytesOut != 0 || len(r.Denied) != 2 {
		t.Errorf("report = %+v, want two destinations refused and no byte upstream", r)
	}
}

// TestResolverNotASCII: a question whose name holds bytes that are not
// ASCII is no allowed name's, whatever they fold into.
func TestResolverNotASCII(t *testing.T) {
	w := newWorld(t)
	g := w.gateway(t, Config{}, "evil.com")
	for _, name := range []string{evilDotted, keyKelvin} {
		resp := g.query("udp", name, dns.TypeA)
		if resp.Rcode != dns.RcodeNameError {
			t.Errorf("A %q = %s, want NXDOMAIN", name, dns.RcodeToString[resp.Rcode])
		}
	}
	if w.up.queries.Load() != 0 {
		t.Errorf("upstream asked %d times, want never", w.up.queries.Load())
	}
	if r := g.Report(); !hasDenial(r, `ev\196\176l.com`, reasonNameNotAllowed) {
		t.Errorf("report = %+v, want ev\\196\\176l.com refused", r)
	}
}

// sslv2Hello is a ClientHello in SSL 2's record format, as OpenSSL's
// SSLv23 clients sent it: a two-byte header (high bit set, length 34),
// type 1, version TLS 1.0, three cipher specs, no session, a 16-byte
// challenge. It has no room for a server name.
var sslv2Hello = append([]byte{
	0x80, 0x22, 0x01, 0x03, 0x01,
	0x00, 0x09, 0x00, 0x00, 0x00, 0x10,
	0x00, 0x00, 0x2f, 0x00, 0x00, 0x35, 0x00, 0x00, 0x0a,
}, []byte("0123456789abcdef")...)

// TestSSLv2Hello: an SSL 2 ClientHello names no server; to an address that
// a name entry alone allows it is refused (transparently and in a tunnel)
// and recorded, unless the operator allows nameless TLS or an address
// entry allows it. Sent a byte at a time, it is refused all the same;
// other bytes with the high bit first pass as any other protocol.
func TestSSLv2Hello(t *testing.T) {
	checkGoroutines(t)
	w := newWorld(t)
	tests := []struct {
		name    string
		cfg     Config
		entries []string
		tunnel  bool
		pause   time.Duration // between bytes, if any
		dest    string        // the denial's destination, "" when passed
	}{
		{"transparent", Config{}, []string{"example.com"}, false, 0, "203.0.113.10:443"},
		{"transparent, a byte at a time", Config{}, []string{"example.com"}, false, 20 * time.Millisecond, "203.0.113.10:443"},
		{"in a tunnel", Config{}, []string{"example.com"}, true, 0, "example.com:443"},
		{"transparent, the operator allows no SNI", Config{AllowNoSNI: true}, []string{"example.com"}, false, 0, ""},
		{"in a tunnel, the operator allows no SNI", Config{AllowNoSNI: true}, []string{"example.com"}, true, 0, ""},
		{"transparent, an address entry", Config{}, []string{"203.0.113.10"}, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := w.gateway(t, tc.cfg, tc.entries...)
			var c net.Conn
			if tc.tunnel {
				c = connectTunnel(t, g.proxyAddr(), "example.com:443")
			} else {
				if tc.entries[0] == "example.com" {
					g.resolve("example.com")
				}
				c = g.dial("203.0.113.10:443")
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if tc.pause > 0 {
				for _, b := range sslv2Hello[:3] {
					c.Write([]byte{b})
					time.Sleep(tc.pause)
				}
				c.Write(sslv2Hello[3:])
			} else {
				c.Write(sslv2Hello)
			}
			if tc.dest != "" {
				if !refused(t, c) {
					t.Fatal("an SSLv2 hello reached the server, want it refused")
				}
				waitFor(t, "the denial", func() bool { return hasDenial(g.Report(), tc.dest, reasonSSLv2) })
				if r := g.Close(); r.BytesOut != 0 {
					t.Errorf("%d bytes sent upstream, want none", r.BytesOut)
				}
				return
			}
			// Go's server refuses SSL 2 itself: what matters is that the
			// hello went upstream.
			c.Read(make([]byte, 64))
			c.Close()
			if r := g.Close(); r.BytesOut < int64(len(sslv2Hello)) || len(r.Denied) != 0 {
				t.Errorf("report = %+v, want the hello sent upstream and nothing denied", r)
			}
		})
	}
	// A first byte with the high bit set and no ClientHello after it is
	// some other protocol's.
	g := w.gateway(t, Config{}, "db.example.com:5432")
	g.resolve("db.example.com")
	c := g.dial("203.0.113.30:5432")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte{0x80, 0x03, 0x05, 'o', 'k'}
	c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != string(msg) {
		t.Errorf("echo of %q = %q, %v, want it back", msg, got, err)
	}
}
