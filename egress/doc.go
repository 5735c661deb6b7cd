// Package egress gives a sandbox that asked for it a narrow way out: an
// allowlist of hosts and ports, enforced on the host. The sandbox's network
// namespace holds loopback and one veth end; on the host end, a per-sandbox
// nftables table sends its TCP to a transparent proxy and its DNS to a
// resolver, both listening on the host end's address, and refuses
// everything else. The resolver answers only allowed names and never
// forwards another upstream; the proxy connects only to allowed
// destinations, never (through a name) to loopback, private, link-local or
// the host's own addresses, and counts the bytes against the run's quota.
//
// A run may have headers injected into its HTTPS requests to some hosts
// (credentials the sandbox never sees): the proxy terminates TLS for those
// hosts alone, with certificates of a per-run CA the sandbox trusts, sets
// the headers on each request and forwards it over TLS of its own,
// verified against the host's trust store. Every other connection is
// spliced unread; plain HTTP is never given the headers.
//
// The user-facing reference is docs/reference.md ("Network egress").
package egress

// DefaultRange is where sandboxes' links take their addresses: a /30
// each (the gateway, the sandbox).
const DefaultRange = "10.201.0.0/16"
