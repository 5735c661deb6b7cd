//go:build !linux

package egress

import (
	"errors"
	"net"
	"net/netip"
)

// originalDst needs Linux's conntrack: elsewhere there is no transparent
// proxy.
func originalDst(net.Conn) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New("original destination: transparent proxying needs Linux")
}
