package fakenet

import (
	"net/netip"
	"strings"
)

// The fake internet's hosts, in the zone "test.".
const (
	// WebName (and any name under it) is the host tests are allowed to reach.
	WebName = "web.test"
	WebAddr = "203.0.113.10"
	// OtherName is a host tests must not reach.
	OtherName = "other.test"
	OtherAddr = "203.0.113.11"
	// PyPIName serves a PEP 503 simple index over HTTPS.
	PyPIName = "pypi.test"
	PyPIAddr = "203.0.113.12"
	// NPMName serves an npm registry over HTTPS.
	NPMName = "npm.test"
	NPMAddr = "203.0.113.13"
	// BadCertName serves HTTPS with a self-signed certificate, which no
	// client trusting the test CA accepts, and plain HTTP.
	BadCertName = "badcert.test"
	BadCertAddr = "203.0.113.14"
	// CDNName and EvilName are two sites of one shared host (a CDN's
	// address, a shared hosting server): TLS picks the site by its
	// server name (SNI), HTTP by its Host, and a request that names
	// neither gets the default site, EvilName's. A program allowed
	// CDNName alone that gets an answer from EvilName has escaped its
	// allowlist.
	CDNName  = "cdn.test"
	EvilName = "evil.test"
	CDNAddr  = "203.0.113.15"
	// LoopName resolves to loopback: a server there must never be hit.
	LoopName = "loop.test"
	LoopAddr = "127.0.0.1"
	// PrivateName resolves to an RFC 1918 address.
	PrivateName = "private.test"
	PrivateAddr = "10.0.0.5"
	// MetaName resolves to the cloud metadata address.
	MetaName = "meta.test"
	MetaAddr = "169.254.169.254"
	// V6Name has an AAAA record (V6Addr) and an A record (WebAddr).
	V6Name = "v6.test"
	V6Addr = "2001:db8::10"
	// DNSAddr is the address of the DNS server, on UDP and TCP port 53.
	DNSAddr = "203.0.113.53"
)

// Ports the servers listen on.
const (
	HTTPPort   = 80
	HTTPSPort  = 443
	AltTLSPort = 8443
	EchoPort   = 7000
	DNSPort    = 53
)

// Zone is the DNS zone the fake internet's names are in.
const Zone = "test."

const (
	// dummyLink holds the namespace's addresses.
	dummyLink = "fakenet0"
	// recordTTL is short so that a resolver's cache never outlives a test.
	recordTTL = 30
)

// The packages the index and the registry serve.
const (
	PyPIPackage = "boxertest"
	PyPIVersion = "1.0"
	NPMPackage  = "boxer-test-pkg"
	NPMVersion  = "1.0.0"
)

// host is one name of the zone: its records and what listens there.
type host struct {
	name     string
	wildcard bool // also answers every name under name
	a, aaaa  []netip.Addr
}

var hosts = []host{
	{name: WebName, wildcard: true, a: addrs(WebAddr)},
	{name: OtherName, a: addrs(OtherAddr)},
	{name: PyPIName, a: addrs(PyPIAddr)},
	{name: NPMName, a: addrs(NPMAddr)},
	{name: BadCertName, a: addrs(BadCertAddr)},
	{name: CDNName, a: addrs(CDNAddr)},
	{name: EvilName, a: addrs(CDNAddr)},
	{name: LoopName, a: addrs(LoopAddr)},
	{name: PrivateName, a: addrs(PrivateAddr)},
	{name: MetaName, a: addrs(MetaAddr)},
	{name: V6Name, a: addrs(WebAddr), aaaa: addrs(V6Addr)},
}

// lookup returns the host that answers for name (lower case, no trailing
// dot), or false.
func lookup(name string) (host, bool) {
	for _, h := range hosts {
		if name == h.name || (h.wildcard && strings.HasSuffix(name, "."+h.name)) {
			return h, true
		}
	}
	return host{}, false
}

// listener is one TCP server of the fake internet.
type listener struct {
	addr string // ip:port
	kind serverKind
}

type serverKind int

const (
	kindHTTP serverKind = iota
	kindHTTPS
	// kindWeb is web.test's HTTPS: hello, and /headers, recording what
	// it receives.
	kindWeb
	kindBadCert
	kindPyPI
	kindNPM
	kindEcho
	kindDNS
	// kindShared is the shared host's HTTP and HTTPS (see CDNName).
	kindShared
	kindSharedTLS
)

var listeners = []listener{
	{hostPort(WebAddr, HTTPPort), kindHTTP},
	{hostPort(WebAddr, HTTPSPort), kindWeb},
	{hostPort(WebAddr, AltTLSPort), kindWeb},
	{hostPort(WebAddr, EchoPort), kindEcho},
	{hostPort(OtherAddr, HTTPPort), kindHTTP},
	{hostPort(OtherAddr, HTTPSPort), kindHTTPS},
	{hostPort(OtherAddr, EchoPort), kindEcho},
	{hostPort(PyPIAddr, HTTPSPort), kindPyPI},
	{hostPort(NPMAddr, HTTPSPort), kindNPM},
	{hostPort(BadCertAddr, HTTPPort), kindHTTP},
	{hostPort(BadCertAddr, HTTPSPort), kindBadCert},
	{hostPort(CDNAddr, HTTPPort), kindShared},
	{hostPort(CDNAddr, HTTPSPort), kindSharedTLS},
	{hostPort(LoopAddr, HTTPPort), kindHTTP},
	{hostPort(LoopAddr, EchoPort), kindEcho},
	{hostPort(PrivateAddr, HTTPPort), kindHTTP},
	{hostPort(PrivateAddr, EchoPort), kindEcho},
	{hostPort(MetaAddr, HTTPPort), kindHTTP},
	{hostPort(V6Addr, HTTPPort), kindHTTP},
	{hostPort(DNSAddr, DNSPort), kindDNS},
}

// linkAddrs are the addresses the dummy link holds: every address of the
// zone but loopback's, and the DNS server's.
func linkAddrs() []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	add := func(a netip.Addr) {
		if !a.IsLoopback() && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, h := range hosts {
		for _, a := range h.a {
			add(a)
		}
		for _, a := range h.aaaa {
			add(a)
		}
	}
	add(netip.MustParseAddr(DNSAddr))
	return out
}

// Addrs returns the addresses the fake internet's namespace holds: every
// address of the zone but loopback's, and the DNS server's.
func Addrs() []netip.Addr {
	return linkAddrs()
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func hostPort(addr string, port uint16) string {
	return netip.AddrPortFrom(netip.MustParseAddr(addr), port).String()
}
