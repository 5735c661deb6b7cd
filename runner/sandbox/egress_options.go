package sandbox

// EgressOptions are the operator's settings of network egress.
type EgressOptions struct {
	// Range is the IPv4 range sandboxes' links are addressed from; empty
	// means egress.DefaultRange.
	Range string
	// UpstreamDNS is the resolver (host:port) boxer asks about allowed
	// names; empty means the host's first nameserver.
	UpstreamDNS string
	// Netns, if set, is a network namespace (a bind-mounted path such as
	// /run/netns/egress) that upstream connections and DNS queries leave
	// from: a dedicated interface or VPN for sandbox traffic.
	Netns string
	// AllowNoSNI lets TLS without a server name, and plain HTTP without a
	// Host name, reach addresses that only a name entry allows (see
	// egress.Config.AllowNoSNI).
	AllowNoSNI bool
}
