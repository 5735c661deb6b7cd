package egress

// A link whose gateway another process serves: a session's keeper.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
)

// GatewayAddr is where a link's gateway listens: what a process that
// serves it later must listen on again (the table redirects there).
type GatewayAddr struct {
	Addr      netip.Addr `json:"addr"`
	ProxyPort uint16     `json:"proxy_port"`
	DNSPort   uint16     `json:"dns_port"`
}

// GatewayAddr is where the link's gateway listens.
func (l *Link) GatewayAddr() GatewayAddr {
	return GatewayAddr{Addr: l.Gateway, ProxyPort: l.gw.ProxyPort(), DNSPort: l.gw.DNSPort()}
}

// GatewayFiles are copies of the gateway's sockets (proxy, resolver over
// UDP, over TCP), for a process that serves them with ServeFiles: what
// the sandbox sends meanwhile waits in them, none refused.
func (l *Link) GatewayFiles() ([]*os.File, error) {
	g := l.gw
	var files []*os.File
	for _, s := range []interface{ File() (*os.File, error) }{g.proxyLn, g.dnsUDP, g.dnsTCP} {
		f, err := s.File()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("handing the gateway's sockets on: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}

// Leave closes this process's gateway and leaves the rest of the link
// (namespace, interfaces, table, lease) to the process that serves it
// now; Release removes it.
func (l *Link) Leave() {
	if l.gw != nil {
		l.gw.Close()
	}
	l.removed = true
}

// ServeFiles returns a gateway on the sockets of files (GatewayFiles'
// order), which it owns from now on. Nothing is served before Start.
func ServeFiles(files []*os.File) (_ *Gateway, retErr error) {
	if len(files) != 3 {
		return nil, fmt.Errorf("a gateway needs 3 sockets, got %d", len(files))
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	g := &Gateway{origDst: originalDst, idle: idleTimeout, peek: peekTimeout}
	defer func() {
		if retErr != nil {
			g.closeListeners()
		}
	}()
	var err error
	var ok bool
	ln, err := net.FileListener(files[0])
	if g.proxyLn, ok = ln.(*net.TCPListener); err != nil || !ok {
		return nil, errors.Join(errors.New("the proxy's socket is not a TCP listener"), err)
	}
	pc, err := net.FilePacketConn(files[1])
	if g.dnsUDP, ok = pc.(*net.UDPConn); err != nil || !ok {
		return nil, errors.Join(errors.New("the resolver's socket is not UDP"), err)
	}
	ln, err = net.FileListener(files[2])
	if g.dnsTCP, ok = ln.(*net.TCPListener); err != nil || !ok {
		return nil, errors.Join(errors.New("the resolver's socket is not a TCP listener"), err)
	}
	g.addr = g.proxyLn.Addr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	return g, nil
}

// ListenAt opens a gateway's sockets on a, where an earlier process
// served it (the table redirects there). Nothing is served before Start.
func ListenAt(a GatewayAddr) (_ *Gateway, retErr error) {
	g := &Gateway{addr: a.Addr.Unmap(), origDst: originalDst, idle: idleTimeout, peek: peekTimeout}
	defer func() {
		if retErr != nil {
			g.closeListeners()
		}
	}()
	var err error
	if g.proxyLn, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(g.addr, a.ProxyPort))); err != nil {
		return nil, fmt.Errorf("listening for the proxy again: %w", err)
	}
	if g.dnsUDP, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(g.addr, a.DNSPort))); err != nil {
		return nil, fmt.Errorf("listening for the resolver again: %w", err)
	}
	if g.dnsTCP, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(g.addr, a.DNSPort))); err != nil {
		return nil, fmt.Errorf("listening for the resolver again: %w", err)
	}
	return g, nil
}

// SetPolicy replaces the allowlist of a started gateway: new names and
// connections are checked against p, those open stay.
func (g *Gateway) SetPolicy(p Policy) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.run == nil || g.closed {
		return errors.New("the gateway is not serving")
	}
	g.run.allow.Store(&p)
	return nil
}

// Release removes the links the sandbox whose run directory is holder
// holds (a link another process made: Leave), as Sweep would once the
// directory is gone.
func Release(dir, holder string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return withLock(dir, func() error {
		held, err := leases(dir)
		if err != nil {
			return err
		}
		var errs []error
		for n, h := range held {
			if h == holder {
				errs = append(errs, removeLease(lease{dir: dir, n: n}))
			}
		}
		return errors.Join(errs...)
	})
}

// removeLease removes what lease l's link left on the host: its host end
// first (as in Remove), its table, then the lease.
func removeLease(l lease) error {
	if err := removeLink(l.hostIf()); err != nil {
		return err
	}
	if err := removeTable(l.table()); err != nil {
		return err
	}
	return l.release()
}
