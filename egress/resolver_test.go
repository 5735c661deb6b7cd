package egress

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// resolverGateway starts a gateway whose upstream answers records.
func resolverGateway(t *testing.T, records map[string][]string, entries ...string) (*testGateway, *testUpstream) {
	t.Helper()
	up := startUpstream(t, records)
	dial, _ := testDial(map[string]string{upstreamDNS: up.addr})
	g := startGateway(t, Config{Policy: mustPolicy(t, entries...), Dial: dial}, nil)
	return g, up
}

func TestResolverAllowedName(t *testing.T) {
	checkGoroutines(t)
	g, _ := resolverGateway(t, map[string][]string{
		"api.example.com":     {"203.0.113.10", "203.0.113.11", "203.0.113.10"},
		"a.cdn.example.net":   {"203.0.113.12"},
		"www.example.org":     {"cname:edge.cdn.test", "203.0.113.20"},
		"tc:big.example.com":  {"203.0.113.30"},
		"other.example.com":   {"203.0.113.40"},
		"gone.example.com":    {},
		"nodata.example.com":  {"cname:nowhere.test"},
		"mixed.example.com":   {"203.0.113.50", "10.0.0.1"},
		"edge.cdn.test":       {"203.0.113.99"},
		"not.asked.example":   {"203.0.113.98"},
		"cdn.example.net":     {"203.0.113.97"},
		"x.other.example.com": {"203.0.113.96"},
	}, "api.example.com", "*.cdn.example.net:443", "www.example.org", "big.example.com", "gone.example.com",
		"nodata.example.com", "mixed.example.com", "missing.example.com")
	tests := []struct {
		network string
		name    string
		want    []string
		rcode   int
	}{
		{"udp", "api.example.com", []string{"203.0.113.10", "203.0.113.11"}, dns.RcodeSuccess},
		{"tcp", "api.example.com", []string{"203.0.113.10", "203.0.113.11"}, dns.RcodeSuccess},
		{"udp", "Api.Example.COM", []string{"203.0.113.10", "203.0.113.11"}, dns.RcodeSuccess},
		{"udp", "a.cdn.example.net", []string{"203.0.113.12"}, dns.RcodeSuccess},
		{"udp", "www.example.org", []string{"203.0.113.20"}, dns.RcodeSuccess},
		{"udp", "big.example.com", []string{"203.0.113.30"}, dns.RcodeSuccess},
		{"udp", "mixed.example.com", []string{"203.0.113.50"}, dns.RcodeSuccess},
		{"udp", "gone.example.com", nil, dns.RcodeNameError},
		{"udp", "nodata.example.com", nil, dns.RcodeNameError},
		{"udp", "missing.example.com", nil, dns.RcodeNameError},
	}
	for _, tc := range tests {
		t.Run(tc.network+" "+tc.name, func(t *testing.T) {
			resp := g.query(tc.network, tc.name, dns.TypeA)
			if resp.Rcode != tc.rcode {
				t.Fatalf("rcode = %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.rcode])
			}
			addrs, ttls := aRecords(resp)
			if !slices.Equal(addrs, tc.want) {
				t.Errorf("addresses = %v, want %v", addrs, tc.want)
			}
			for i, rr := range resp.Answer {
				if rr.Header().Name != dns.Fqdn(tc.name) {
					t.Errorf("answer %d owner = %q, want the question's %q", i, rr.Header().Name, dns.Fqdn(tc.name))
				}
				if ttls[i] > 60 {
					t.Errorf("answer %d TTL = %d, want at most 60", i, ttls[i])
				}
			}
			if len(resp.Answer) != len(tc.want) {
				t.Errorf("%d answers, want %d (A records only): %v", len(resp.Answer), len(tc.want), resp.Answer)
			}
		})
	}
	for _, name := range []string{"api.example.com", "a.cdn.example.net", "www.example.org"} {
		if !g.run.resolvedFor(name, netip.MustParseAddr(map[string]string{
			"api.example.com": "203.0.113.11", "a.cdn.example.net": "203.0.113.12", "www.example.org": "203.0.113.20",
		}[name])) {
			t.Errorf("the resolver does not remember what it answered for %s", name)
		}
	}
}

func TestResolverRefusesUnknownNames(t *testing.T) {
	g, up := resolverGateway(t, map[string][]string{
		"evil.com":        {"203.0.113.66"},
		"cdn.example.net": {"203.0.113.97"},
	}, "api.example.com", "*.cdn.example.net")
	for _, name := range []string{"evil.com", "x.api.example.com", "cdn.example.net", "secret-data.evil.com", "a_b.cdn.example.net", "localhost"} {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
			if resp := g.query("udp", name, qtype); resp.Rcode != dns.RcodeNameError || len(resp.Answer) != 0 {
				t.Errorf("%s %s: rcode %s with %d answers, want NXDOMAIN and none", name, dns.TypeToString[qtype], dns.RcodeToString[resp.Rcode], len(resp.Answer))
			}
		}
	}
	if n := up.queries.Load(); n != 0 {
		t.Errorf("upstream got %d queries, want 0: a name not allowed must never be forwarded", n)
	}
	if r := g.Report(); !hasDenial(r, "evil.com", "name not allowed") {
		t.Errorf("denials = %v, want evil.com: name not allowed", r.Denied)
	}
}

func TestResolverRebinding(t *testing.T) {
	up := startUpstream(t, map[string][]string{
		"loop.example.com":     {"127.0.0.1"},
		"private.example.com":  {"192.168.1.5", "203.0.113.12"},
		"metadata.example.com": {"169.254.169.254"},
		"db.corp.example.com":  {"10.1.2.3"},
		"self.example.com":     {"203.0.113.77"},
	})
	dial, _ := testDial(map[string]string{upstreamDNS: up.addr})
	g := startGateway(t, Config{
		Policy: mustPolicy(t, "loop.example.com", "private.example.com", "metadata.example.com",
			"db.corp.example.com:5432", "10.0.0.0/8:5432", "self.example.com"),
		Dial:  dial,
		Local: func(a netip.Addr) bool { return a == netip.MustParseAddr("203.0.113.77") },
	}, nil)
	tests := []struct {
		name  string
		want  []string
		rcode int
	}{
		{"loop.example.com", nil, dns.RcodeNameError},
		{"private.example.com", []string{"203.0.113.12"}, dns.RcodeSuccess},
		{"metadata.example.com", nil, dns.RcodeNameError},
		{"db.corp.example.com", []string{"10.1.2.3"}, dns.RcodeSuccess},
		{"self.example.com", nil, dns.RcodeNameError},
	}
	for _, tc := range tests {
		resp := g.query("udp", tc.name, dns.TypeA)
		addrs, _ := aRecords(resp)
		if resp.Rcode != tc.rcode || !slices.Equal(addrs, tc.want) {
			t.Errorf("%s: %s %v, want %s %v", tc.name, dns.RcodeToString[resp.Rcode], addrs, dns.RcodeToString[tc.rcode], tc.want)
		}
	}
	r := g.Report()
	for _, d := range []struct{ dest, reason string }{
		{"loop.example.com", "resolves to 127.0.0.1: loopback"},
		{"private.example.com", "resolves to 192.168.1.5: private"},
		{"metadata.example.com", "resolves to 169.254.169.254: link-local (cloud metadata)"},
		{"self.example.com", "resolves to 203.0.113.77: the host's own address"},
	} {
		if !hasDenial(r, d.dest, d.reason) {
			t.Errorf("denials = %v, want %v", r.Denied, d)
		}
	}
	if g.run.resolvedFor("loop.example.com", loopback) {
		t.Error("the resolver remembers 127.0.0.1 for loop.example.com, which it refused")
	}
}

func TestResolverOtherTypesEmpty(t *testing.T) {
	g, up := resolverGateway(t, map[string][]string{"api.example.com": {"203.0.113.10"}}, "api.example.com")
	for _, qtype := range []uint16{dns.TypeAAAA, dns.TypeTXT, dns.TypeMX, dns.TypeANY, dns.TypeNULL} {
		resp := g.query("udp", "api.example.com", qtype)
		if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 0 {
			t.Errorf("%s: rcode %s with %d answers, want NOERROR and none", dns.TypeToString[qtype], dns.RcodeToString[resp.Rcode], len(resp.Answer))
		}
	}
	if n := up.queries.Load(); n != 0 {
		t.Errorf("upstream got %d queries, want 0: only A is forwarded", n)
	}
}

func TestResolverUpstreamFails(t *testing.T) {
	dial, _ := testDial(nil)
	g := startGateway(t, Config{Policy: mustPolicy(t, "api.example.com"), Dial: dial}, nil)
	if resp := g.query("udp", "api.example.com", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode = %s, want SERVFAIL when upstream cannot be reached", dns.RcodeToString[resp.Rcode])
	}
}

func TestResolverMalformed(t *testing.T) {
	g, _ := resolverGateway(t, map[string][]string{"api.example.com": {"203.0.113.10"}}, "api.example.com")
	addr := netip.AddrPortFrom(loopback, g.DNSPort()).String()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, junk := range [][]byte{{0}, []byte("hello, resolver"), make([]byte, 12), {0, 1, 1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0xff}} {
		c.Write(junk)
	}
	two := new(dns.Msg)
	two.SetQuestion("api.example.com.", dns.TypeA)
	two.Question = append(two.Question, two.Question[0])
	resp, err := dns.Exchange(two, addr)
	if err != nil {
		t.Fatalf("two questions: %v", err)
	}
	if resp.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: rcode %s, want FORMERR", dns.RcodeToString[resp.Rcode])
	}
	if resp := g.query("udp", "api.example.com", dns.TypeA); resp.Rcode != dns.RcodeSuccess {
		t.Errorf("after junk: rcode %s, want the resolver still answering", dns.RcodeToString[resp.Rcode])
	}
}

func TestResolverRateLimit(t *testing.T) {
	g, _ := resolverGateway(t, nil, "api.example.com")
	refused := 0
	start := time.Now()
	for range maxQueryRate + 50 {
		if g.query("tcp", "evil.com", dns.TypeA).Rcode == dns.RcodeRefused {
			refused++
		}
	}
	if time.Since(start) < time.Second && refused < 50 {
		t.Errorf("%d of %d queries within a second refused, want at least 50", refused, maxQueryRate+50)
	}
}

func TestRateLimit(t *testing.T) {
	l := rateLimit{max: 3}
	now := time.Now()
	for i, want := range []bool{true, true, true, false, false} {
		if got := l.allow(now); got != want {
			t.Errorf("event %d: allow = %v, want %v", i, got, want)
		}
	}
	if !l.allow(now.Add(time.Second)) {
		t.Error("a second later: allow = false, want true")
	}
}

func TestResolverTCPConnectionCap(t *testing.T) {
	g, _ := resolverGateway(t, map[string][]string{"api.example.com": {"203.0.113.10"}}, "api.example.com")
	addr := netip.AddrPortFrom(loopback, g.DNSPort()).String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range maxDNSConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	m := new(dns.Msg)
	m.SetQuestion("api.example.com.", dns.TypeA)
	client := &dns.Client{Net: "tcp", Timeout: time.Second}
	if _, _, err := client.Exchange(m, addr); err == nil {
		t.Errorf("a query over TCP past %d connections was answered, want it refused", maxDNSConns)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	waitFor(t, "a TCP answer once connections closed", func() bool {
		resp, _, err := client.Exchange(m, addr)
		return err == nil && resp.Rcode == dns.RcodeSuccess
	})
}
