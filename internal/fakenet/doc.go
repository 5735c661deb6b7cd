// Package fakenet is a fake internet for boxer's tests and benchmark: a
// network namespace of its own holding the addresses of a few hosts under
// the zone "test.", a DNS server that answers for them, and HTTP, HTTPS and
// TCP echo servers on them, including a Python package index, an npm
// registry, a header echo (web.test's /headers), a host whose
// certificate no client trusts (badcert.test) and a shared host whose
// address serves two sites (cdn.test and evil.test), picked by the TLS
// server name or the HTTP Host. Nothing in it has a route
// out, so no test packet can leave the machine; boxer's egress proxy
// reaches it by dialling from inside the namespace (--egress-netns) and
// asking its DNS server (--dns-upstream).
//
// The servers run as goroutines of the calling process; their sockets
// belong to the namespace.
package fakenet
