package egress

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
)

const (
	// listenTries bounds the attempts to find a port free for the resolver
	// on both UDP and TCP.
	listenTries = 8
	// maxDNSConns caps the sandbox's concurrent DNS-over-TCP connections:
	// a resolver needs one or two, and each costs the host an fd.
	maxDNSConns = 16
)

// Gateway is one sandbox's proxy and resolver, listening on the host end of
// its link.
type Gateway struct {
	addr    netip.Addr
	proxyLn *net.TCPListener
	dnsUDP  *net.UDPConn
	dnsTCP  *net.TCPListener

	// origDst, idle and peek are the proxy's original destination lookup
	// and timeouts; tests replace them before Start.
	origDst func(net.Conn) (netip.AddrPort, error)
	idle    time.Duration
	peek    time.Duration

	mu      sync.Mutex
	started bool
	closed  bool
	run     *run
	servers []*dns.Server
	wg      sync.WaitGroup

	closeOnce sync.Once
	final     Report
}

// Listen opens the gateway's sockets on addr, the host end of a sandbox's
// link: the proxy on a free TCP port, the resolver on one port free for
// both UDP and TCP. Nothing is served before Start.
func Listen(addr netip.Addr) (_ *Gateway, retErr error) {
	addr = addr.Unmap()
	g := &Gateway{addr: addr, origDst: originalDst, idle: idleTimeout, peek: peekTimeout}
	defer func() {
		if retErr != nil {
			g.closeListeners()
		}
	}()
	var err error
	if g.proxyLn, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, 0))); err != nil {
		return nil, fmt.Errorf("listening for the proxy on %s: %w", addr, err)
	}
	for range listenTries {
		if g.dnsUDP, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0))); err != nil {
			return nil, fmt.Errorf("listening for the resolver on %s: %w", addr, err)
		}
		port := g.dnsUDP.LocalAddr().(*net.UDPAddr).AddrPort().Port()
		g.dnsTCP, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, port)))
		if err == nil {
			return g, nil
		}
		g.dnsUDP.Close()
		g.dnsUDP = nil
	}
	return nil, fmt.Errorf("listening for the resolver on %s: no port free for both UDP and TCP: %w", addr, err)
}

// closeListeners closes the sockets Listen opened.
func (g *Gateway) closeListeners() {
	if g.proxyLn != nil {
		g.proxyLn.Close()
	}
	if g.dnsUDP != nil {
		g.dnsUDP.Close()
	}
	if g.dnsTCP != nil {
		g.dnsTCP.Close()
	}
}

// ProxyPort is the TCP port of the proxy.
func (g *Gateway) ProxyPort() uint16 {
	return g.proxyLn.Addr().(*net.TCPAddr).AddrPort().Port()
}

// DNSPort is the port, UDP and TCP, of the resolver.
func (g *Gateway) DNSPort() uint16 {
	return g.dnsUDP.LocalAddr().(*net.UDPAddr).AddrPort().Port()
}

// Start begins serving the sandbox under cfg. Only the first call counts;
// after Close it does nothing.
func (g *Gateway) Start(cfg Config) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started || g.closed {
		return
	}
	g.started = true
	g.run = newRun(cfg)
	p := &proxy{
		run:     g.run,
		self:    netip.AddrPortFrom(g.addr, g.ProxyPort()),
		origDst: g.origDst,
		idle:    g.idle,
		peek:    g.peek,
		wg:      &g.wg,
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		p.serve(g.proxyLn)
	}()
	res := newResolver(g.run)
	g.servers = []*dns.Server{
		{PacketConn: g.dnsUDP, Handler: res},
		{Listener: &limitListener{Listener: g.dnsTCP, sem: make(chan struct{}, maxDNSConns)}, Handler: res},
	}
	for _, srv := range g.servers {
		g.serveDNS(srv)
	}
}

// serveDNS runs srv and returns once it serves, so that Close can shut it
// down.
func (g *Gateway) serveDNS(srv *dns.Server) {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	failed := make(chan struct{})
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer close(failed)
		srv.ActivateAndServe()
	}()
	select {
	case <-started:
	case <-failed:
	}
}

// Close stops the gateway: it closes the listeners and every connection,
// waits for every goroutine and returns the final report. It may be called
// more than once, and without Start.
func (g *Gateway) Close() Report {
	g.closeOnce.Do(g.close)
	return g.final
}

func (g *Gateway) close() {
	g.mu.Lock()
	g.closed = true
	r, servers := g.run, g.servers
	g.mu.Unlock()
	if r != nil {
		r.shutdown()
	}
	g.proxyLn.Close()
	for _, srv := range servers {
		// An error says only that the server had stopped already.
		_ = srv.Shutdown()
	}
	g.closeListeners()
	g.wg.Wait()
	if r != nil {
		g.final = r.report()
	}
}

// Report returns a snapshot of what the sandbox's network did so far.
func (g *Gateway) Report() Report {
	g.mu.Lock()
	r := g.run
	g.mu.Unlock()
	if r == nil {
		return Report{}
	}
	return r.report()
}

// limitListener closes the connections accepted past the capacity of sem
// until some of those open close.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, sem: l.sem}, nil
		default:
			c.Close()
		}
	}
}

// limitConn frees its place in a limitListener when closed.
type limitConn struct {
	net.Conn
	sem  chan struct{}
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() { <-c.sem })
	return c.Conn.Close()
}
