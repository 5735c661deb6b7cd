package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// ip6tSOOriginalDst is IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/ip6_tables.h),
// which x/sys/unix does not define.
const ip6tSOOriginalDst = 80

// originalDst returns the destination a connection redirected by nftables
// (redirect, dnat) was sent to, from conntrack (SO_ORIGINAL_DST).
func originalDst(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, errors.New("original destination: not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	local := tc.LocalAddr().(*net.TCPAddr).AddrPort().Addr()
	var dst netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		if local.Unmap().Is4() {
			dst, serr = originalDst4(int(fd))
		} else {
			dst, serr = originalDst6(int(fd))
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	return dst, nil
}

// originalDst4 reads the struct sockaddr_in SO_ORIGINAL_DST returns; the
// IPv6Mreq getter is the one of x/sys with a buffer large enough.
func originalDst4(fd int) (netip.AddrPort, error) {
	m, err := unix.GetsockoptIPv6Mreq(fd, unix.SOL_IP, unix.SO_ORIGINAL_DST)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port := binary.BigEndian.Uint16(m.Multiaddr[2:4])
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(m.Multiaddr[4:8])), port), nil
}

// originalDst6 reads the struct sockaddr_in6 IP6T_SO_ORIGINAL_DST returns,
// through the getter of a struct that starts with one.
func originalDst6(fd int) (netip.AddrPort, error) {
	info, err := unix.GetsockoptIPv6MTUInfo(fd, unix.SOL_IPV6, ip6tSOOriginalDst)
	if err != nil {
		return netip.AddrPort{}, err
	}
	// Port holds the network-order bytes as the kernel wrote them.
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], info.Addr.Port)
	return netip.AddrPortFrom(netip.AddrFrom16(info.Addr.Addr), binary.BigEndian.Uint16(b[:])), nil
}
