package egress

import (
	"context"
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
}

// Denial is one refused destination and why.
type Denial struct {
	// Destination is a name, host:port or address as the program asked.
	Destination string `json:"destination"`
	Reason      string `json:"reason"`
}

// MaxDenied caps Report.Denied.
const MaxDenied = 20
