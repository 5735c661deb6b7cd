package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// idleTimeout closes a connection with no traffic either way.
	idleTimeout = 5 * time.Minute
	// peekTimeout bounds the wait for a connection's first bytes (its TLS
	// ClientHello or HTTP request line).
	peekTimeout = 10 * time.Second
	// maxPeek caps the bytes read to find a connection's name, all of them
	// replayed upstream.
	maxPeek = 16 << 10
	// dialTimeout bounds a connection upstream.
	dialTimeout = 10 * time.Second
	// acceptBackoff is the pause after a failed accept (out of fds).
	acceptBackoff = 50 * time.Millisecond
)

// proxy is a sandbox's TCP proxy: transparent for the connections nftables
// redirects to it, an HTTP proxy for those that name it (HTTP_PROXY).
type proxy struct {
	run *run
	// self is the proxy's listening address: a connection whose original
	// destination it is used the proxy explicitly.
	self    netip.AddrPort
	origDst func(net.Conn) (netip.AddrPort, error)
	idle    time.Duration
	peek    time.Duration
	wg      *sync.WaitGroup
}

// serve accepts connections until ln is closed.
func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(acceptBackoff)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

// handle serves one connection from the sandbox.
func (p *proxy) handle(c net.Conn) {
	dst, err := p.origDst(c)
	if err != nil {
		reset(c)
		return
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	if reason := p.run.open(c, dst.String()); reason != "" {
		reset(c)
		return
	}
	defer p.run.done(c)
	if dst == p.self {
		p.explicit(c)
		c.Close()
		return
	}
	p.transparent(c, dst)
}

// reset closes c with a TCP RST where it can: a refused connection fails at
// once rather than look like an empty answer.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// transparent serves a connection redirected from dst: it reads the name
// the program asked for (TLS SNI, HTTP Host), decides, and splices the
// connection to dst, or forwards it request by request if it speaks HTTP,
// or, if it speaks TLS to a host with injected headers, HTTPS.
func (p *proxy) transparent(c net.Conn, dst netip.AddrPort) {
	if dst.Addr() == p.self.Addr() {
		p.run.deny(dst.String(), "boxer's gateway")
		reset(c)
		return
	}
	name, host, kind, peeked, reason := p.sniff(c)
	if reason == "" {
		reason = p.decide(dst, name)
	}
	if reason == "" && name == "" {
		switch kind {
		case kindTLS:
			reason = p.noSNI(dst, reasonNoSNI)
		case kindSSLv2:
			reason = p.noSNI(dst, reasonSSLv2)
		case kindHTTP:
			reason = p.noHost(dst, host)
		}
	}
	if reason != "" {
		p.run.deny(transparentDest(dst, name, reason), reason)
		reset(c)
		return
	}
	if kind == kindHTTP {
		p.transparentHTTP(c, dst, peeked)
		c.Close()
		return
	}
	if kind == kindTLS && name != "" && p.run.injections(name) != nil {
		p.intercept(c, peeked, name, dst.Port(), func(ctx context.Context) (net.Conn, error) {
			return p.dialAddr(ctx, dst)
		})
		return
	}
	up, err := p.dialAddr(p.run.ctx, dst)
	if err != nil {
		reset(c)
		return
	}
	if !p.run.policy().AddrAllowed(dst.Addr(), dst.Port()) {
		// A name allowed it: the name must be checked, even late.
		c = p.late(c, peeked, dst.String())
	}
	p.splice(c, up, peeked)
}

// transparentDest names a refused transparent destination: the name asked
// for and its port when there is one, the address too when it is the cause.
func transparentDest(dst netip.AddrPort, name, reason string) string {
	if name == "" {
		return dst.String()
	}
	dest := net.JoinHostPort(name, strconv.Itoa(int(dst.Port())))
	if reason == reasonNotResolved {
		dest += " (" + dst.Addr().String() + ")"
	}
	return dest
}

// The reasons of transparent refusals that tests and users match on.
const (
	reasonNameNotAllowed = "name not allowed"
	reasonNotResolved    = "address was not resolved for name"
	reasonNotFromName    = "address not obtained from an allowed name"
	reasonNoSNI          = "TLS ClientHello without a server name (SNI)"
	reasonSSLv2          = "SSLv2-format ClientHello, which names no server"
	reasonNoHost         = "HTTP request without a Host"
)

// noSNI returns why TLS that names no server may not reach dst (reason,
// which says what hello it was), or "" if it may (see namelessAllowed).
func (p *proxy) noSNI(dst netip.AddrPort, reason string) string {
	if p.namelessAllowed(dst) {
		return ""
	}
	return reason
}

// noHost returns why an HTTP request whose Host is host (as sent: "" for
// none, else an address) may not reach dst, or "" if it may (see
// namelessAllowed).
func (p *proxy) noHost(dst netip.AddrPort, host string) string {
	switch {
	case p.namelessAllowed(dst):
		return ""
	case host == "":
		return reasonNoHost
	}
	return fmt.Sprintf("HTTP Host %s is an address, not an allowed name", hostPart(host))
}

// namelessAllowed reports whether TLS or HTTP that names no site (no SNI,
// no Host or an address as Host) may reach dst: an address or CIDR entry
// allows dst, or the operator allows it (AllowNoSNI). An address that a
// name entry alone allows may be a shared host's or a CDN's, where such a
// connection reaches the default site, which need not be the allowed
// name's.
func (p *proxy) namelessAllowed(dst netip.AddrPort) bool {
	return p.run.cfg.AllowNoSNI || p.run.policy().AddrAllowed(dst.Addr(), dst.Port())
}

// decide returns why the sandbox may not reach dst having asked for name
// ("" when it did not name one), or "" if it may.
func (p *proxy) decide(dst netip.AddrPort, name string) string {
	ip, port := dst.Addr(), dst.Port()
	policy := p.run.policy()
	if reason := hardBlocked(ip, p.run.local); reason != "" {
		return reason
	}
	if policy.AddrAllowed(ip, port) {
		return ""
	}
	if name != "" {
		switch {
		case !policy.NameKnown(name):
			return reasonNameNotAllowed
		case !policy.NameAllowed(name, port):
			return fmt.Sprintf("port %d not allowed for name", port)
		case !p.run.resolvedFor(name, ip):
			return reasonNotResolved
		}
	} else if !p.run.resolvedForPort(ip, port) {
		return reasonNotFromName
	}
	return Blocked(ip)
}

// dialAddr connects to dst through the run's dialer, never resolving a
// name, and tracks the connection.
func (p *proxy) dialAddr(ctx context.Context, dst netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	up, err := p.run.dial(ctx, "tcp", dst.String())
	if err != nil {
		return nil, err
	}
	return p.upstream(up, dst.String())
}

// upstream tracks and counts a connection to dest, or closes it when the
// run takes no more connections.
func (p *proxy) upstream(up net.Conn, dest string) (net.Conn, error) {
	cc := &countedConn{Conn: up, run: p.run, dest: dest}
	if !p.run.track(cc) {
		up.Close()
		return nil, errors.New("the sandbox's network is closed or over its quota")
	}
	return cc, nil
}

// splice copies between the sandbox's connection c and up, replaying the
// peeked bytes first, until both sides are done, an error, or neither has
// sent anything for the idle timeout. It closes both.
func (p *proxy) splice(c, up net.Conn, peeked []byte) {
	defer c.Close()
	defer up.Close()
	if len(peeked) > 0 {
		if _, err := up.Write(peeked); err != nil {
			return
		}
	}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		p.copy(up, c, &last)
	}()
	p.copy(c, up, &last)
	<-done
}

// copy copies src to dst until src ends, then half-closes dst. On an error
// or the idle timeout it closes both, which ends the other direction too.
func (p *proxy) copy(dst, src net.Conn, last *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		src.SetReadDeadline(time.Unix(0, last.Load()).Add(p.idle))
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			last.Store(now.UnixNano())
			dst.SetWriteDeadline(now.Add(p.idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			break
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < p.idle {
			continue
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// countedConn counts a destination's bytes against the run's quota and
// stops being tracked when closed.
type countedConn struct {
	net.Conn
	run  *run
	dest string
	once sync.Once
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.run.count(c.dest, n, 0)
	}
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.run.count(c.dest, 0, n)
	}
	return n, err
}

// CloseWrite half-closes the connection when it can.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.run.untrack(c) })
	return c.Conn.Close()
}
