package egress

import "net/netip"

// Temporary stand-in until the gateway lands (removed at merge).
type Gateway struct{}

func Listen(addr netip.Addr) (*Gateway, error) { return &Gateway{}, nil }
func (g *Gateway) ProxyPort() uint16           { return 3128 }
func (g *Gateway) DNSPort() uint16             { return 5353 }
func (g *Gateway) Start(cfg Config)            {}
func (g *Gateway) Close() Report               { return Report{} }
func (g *Gateway) Report() Report              { return Report{} }
