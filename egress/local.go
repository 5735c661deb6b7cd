package egress

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// localTTL is how long the host's addresses are cached: long enough that a
// burst of connections reads the interfaces once, short enough to see an
// address added by DHCP or the operator.
const localTTL = 2 * time.Second

var localCache struct {
	mu    sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
}

// isLocal reports whether a is one of the host's interface addresses, the
// default of Config.Local. If the interfaces cannot be read, every address
// counts as local: the proxy then refuses rather than reach the host.
func isLocal(a netip.Addr) bool {
	a = a.Unmap()
	localCache.mu.Lock()
	defer localCache.mu.Unlock()
	if localCache.addrs == nil || time.Since(localCache.at) > localTTL {
		addrs, err := hostAddrs()
		if err != nil {
			return true
		}
		localCache.addrs, localCache.at = addrs, time.Now()
	}
	return localCache.addrs[a]
}

// hostAddrs reads the host's interface addresses.
func hostAddrs() (map[netip.Addr]bool, error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	addrs := make(map[netip.Addr]bool, len(ifAddrs))
	for _, ia := range ifAddrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			addrs[a.Unmap()] = true
		}
	}
	return addrs, nil
}
