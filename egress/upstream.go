package egress

import (
	"fmt"
	"net"

	"github.com/miekg/dns"
)

// HostResolver is the host's first nameserver (host:port), from
// /etc/resolv.conf: the default upstream of sandboxes' resolvers.
func HostResolver() (string, error) {
	cfg, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cfg.Servers) == 0 {
		return "", fmt.Errorf("no upstream resolver: /etc/resolv.conf names none (%v); set one with --dns-upstream", err)
	}
	return net.JoinHostPort(cfg.Servers[0], cfg.Port), nil
}
