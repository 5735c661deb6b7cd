package egress

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
)

// Rule is one allowlist entry (--allow-host HOST[:PORT]).
type Rule struct {
	// Text is the entry as given.
	Text string
	// Name is a lower-case DNS name without a trailing dot; for a wildcard
	// rule ("*.example.com") the domain after "*.". Empty for IP rules.
	Name     string
	Wildcard bool
	// Prefix is the address or CIDR of an IP rule (an address is a /32 or
	// /128); invalid for name rules.
	Prefix netip.Prefix
	// Ports the rule allows: 443 unless the entry names others.
	Ports []uint16
}

// Policy is a run's allowlist; empty means no egress.
type Policy []Rule

// Dialer opens an upstream connection (the proxy's to a destination, the
// resolver's to its upstream).
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Config is what a sandbox's gateway enforces.
type Config struct {
	Policy Policy
	// MaxBytes caps bytes in + out over all of the run's connections;
	// 0 is no cap (the runner always sets one).
	MaxBytes int64
	// MaxConns caps the run's concurrent connections; 0 is no cap.
	MaxConns int
	// UpstreamDNS is the resolver allowed names are asked of (host:port).
	UpstreamDNS string
	// Dial opens upstream connections; nil dials from the host's network.
	Dial Dialer
	// Local reports whether an address is one of the host's own: never
	// reachable, even through an explicit IP rule. nil: the host's
	// interface addresses.
	Local func(netip.Addr) bool
	// Inject lists the headers set on requests to their hosts; the proxy
	// terminates TLS for those hosts only, with certificates of CA.
	// Injection is for HTTPS alone: plain HTTP to such a host, and TLS
	// that names no host (no SNI), pass as to any other, without the
	// header.
	Inject []Injection
	// CA issues the certificates of intercepted hosts; required when
	// Inject is set: without it, connections to those hosts are refused.
	CA *CA
	// Roots verifies intercepted hosts' upstream certificates; nil: the
	// host's trust store.
	Roots *x509.CertPool
	// AllowNoSNI lets TLS that names no server (no SNI) reach an address
	// that only a name entry allows, transparently or in a CONNECT
	// tunnel to a name, and transparent plain HTTP without a Host or with
	// an address as Host. Without it such a ClientHello or request is
	// refused: on a shared host or a CDN it reaches the address's default
	// site, whichever that is. Address and CIDR entries never need SNI
	// or Host.
	AllowNoSNI bool
}

// Injection is one header boxer sets on HTTPS requests to Host, replacing
// any the sandbox sent under that name.
type Injection struct {
	Host   string // lower-case DNS name (exact; no wildcard)
	Header string // canonical header name
	Value  string // the rendered value: a secret; never logged, never in Report or errors
}

// String describes the injection without its value, so that printing a
// Config ("%v", "%+v") shows no secret.
func (in Injection) String() string {
	return fmt.Sprintf("%s: %s: [redacted]", in.Host, in.Header)
}

// GoString is String for "%#v".
func (in Injection) GoString() string {
	return fmt.Sprintf("egress.Injection{Host: %q, Header: %q, Value: [redacted]}", in.Host, in.Header)
}

// Report is what a run's network did, for its result and the audit log.
type Report struct {
	// Allowed is the allowlist as given.
	Allowed     []string `json:"allowed"`
	Connections int      `json:"connections"`
	BytesIn     int64    `json:"bytes_in"`
	BytesOut    int64    `json:"bytes_out"`
	// Denied lists refused destinations, at most MaxDenied of them;
	// DeniedTotal counts them all.
	Denied        []Denial `json:"denied,omitempty"`
	DeniedTotal   int      `json:"denied_total,omitempty"`
	QuotaExceeded bool     `json:"quota_exceeded,omitempty"`
	// Intercepted counts the HTTP requests that got an injected header.
	Intercepted int `json:"intercepted,omitempty"`
}

// Denial is one refused destination and why.
type Denial struct {
	// Destination is a name, host:port or address as the program asked.
	Destination string `json:"destination"`
	Reason      string `json:"reason"`
	// Status is the HTTP status the proxy answered the sandbox where it
	// answered instead of refusing the connection (502: an intercepted
	// host's upstream TLS failed); 0 for the others.
	Status int `json:"status,omitempty"`
}

// MaxDenied caps Report.Denied.
const MaxDenied = 20
