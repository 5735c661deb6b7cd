package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// connect serves a CONNECT request: it answers 403 if the destination is
// not allowed, else 200, and serves the tunnel. The tunnel to a name must
// speak to that name alone (see tunnel); the tunnel to an address, which
// only an address entry allows, is spliced.
func (p *proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	var name string
	host, port, ok := splitDest(req.Host)
	if ok {
		var reason string
		if name, reason = hostName(host); reason != "" {
			dest := net.JoinHostPort(name, strconv.Itoa(int(port)))
			p.run.deny(dest, reason)
			writeDialError(c, dest, &refusedError{dest, http.StatusForbidden, reason})
			return
		}
	}
	var up net.Conn
	if name != "" && p.run.injections(name) != nil {
		// Intercepted: connections upstream are dialled as its requests
		// need them.
		if re := p.nameRefused(req.Host, name, port); re != nil {
			p.run.deny(re.dest, re.reason)
			writeDialError(c, req.Host, re)
			return
		}
	} else {
		var err error
		if up, err = p.dialHostPort(p.run.ctx, req.Host); err != nil {
			writeDialError(c, req.Host, err)
			return
		}
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		if up != nil {
			up.Close()
		}
		return
	}
	// The client may have sent its first bytes (a ClientHello) with the
	// request: they are in br, not in c.
	pre, _ := br.Peek(br.Buffered())
	if name == "" {
		p.splice(c, up, pre)
		return
	}
	p.tunnel(c, up, pre, req.Host, name, port)
}

// tunnel serves a CONNECT tunnel to name (dest as the client asked) as the
// transparent path serves a connection: it reads the client's first bytes
// (pre holds those read already), and TLS must name name as its server,
// HTTP every request's Host, else the tunnel is reset and the denial
// recorded. Without that check a tunnel opened for an allowed name could
// reach any site behind its address (a CDN, a shared host). up is the
// connection upstream, used first; nil when the name is intercepted.
func (p *proxy) tunnel(c, up net.Conn, pre []byte, dest, name string, port uint16) {
	var mu sync.Mutex
	dial := func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		first := up
		up = nil
		mu.Unlock()
		if first != nil {
			return first, nil
		}
		return p.dialHostPort(ctx, dest)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if up != nil {
			up.Close()
		}
	}()
	sni, _, kind, peeked, reason := p.sniff(&replayConn{Conn: c, pre: pre})
	refused := dest
	switch {
	case reason != "":
	case kind == kindTLS:
		reason = tunnelTLSRefused(name, sni, p.run.cfg.AllowNoSNI)
	case kind == kindSSLv2 && !p.run.cfg.AllowNoSNI:
		reason = reasonSSLv2
	}
	if sni != "" {
		refused = net.JoinHostPort(sni, strconv.Itoa(int(port)))
	}
	if reason != "" {
		p.run.deny(refused, reason)
		reset(c)
		return
	}
	switch {
	case kind == kindHTTP:
		p.serveHTTP(c, peeked, dial, func(req *http.Request) (string, string) {
			return tunnelHostRefused(req, name, port)
		})
		c.Close()
	case kind == kindTLS && p.run.injections(name) != nil:
		p.intercept(c, peeked, name, port, dial)
	default:
		u, err := dial(p.run.ctx)
		if err != nil {
			reset(c)
			return
		}
		p.splice(p.late(c, peeked, dest), u, peeked)
	}
}

// tunnelTLSRefused returns why a tunnel to target may not carry TLS that
// names sni as its server ("" for none), or "" if it may.
func tunnelTLSRefused(target, sni string, allowNoSNI bool) string {
	switch {
	case sni == target:
		return ""
	case sni == "" && allowNoSNI:
		return ""
	case sni == "":
		return reasonNoSNI
	}
	return fmt.Sprintf("TLS server name %s is not the CONNECT target %s", sni, target)
}

// tunnelHostRefused returns the destination and why a request in a tunnel
// to target (on port) is refused, or "" reasons if its Host is target. A
// request without a Host (HTTP/1.0) is given target's: the tunnel says
// whom it is for, and the server's default site must not answer it.
func tunnelHostRefused(req *http.Request, target string, port uint16) (dest, reason string) {
	if req.Host == "" {
		req.Host = target
	}
	req.URL.Host = net.JoinHostPort(target, strconv.Itoa(int(port)))
	name, reason := hostName(req.Host)
	if reason != "" {
		return net.JoinHostPort(name, strconv.Itoa(int(port))), reason
	}
	if name != target {
		host := name
		if host == "" {
			// An address, which names no site.
			host = hostPart(req.Host)
		}
		return net.JoinHostPort(host, strconv.Itoa(int(port))), fmt.Sprintf("HTTP Host %s is not the CONNECT target %s", host, target)
	}
	return "", ""
}

// replayConn reads pre before the connection's own bytes.
type replayConn struct {
	net.Conn
	pre []byte
}

func (c *replayConn) Read(b []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(b, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
