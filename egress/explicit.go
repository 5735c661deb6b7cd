package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// maxHeaderBytes caps the header of a request to the explicit proxy, as
// http.Server's default does.
const maxHeaderBytes = 1 << 20

// refusedError is a destination the explicit proxy refuses, with the
// status it answers.
type refusedError struct {
	dest   string
	status int
	reason string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s refused: %s", e.dest, e.reason)
}

// explicit serves a connection that names the proxy (HTTP_PROXY,
// HTTPS_PROXY): CONNECT tunnels and absolute-form HTTP requests, as many as
// the client sends on the connection.
func (p *proxy) explicit(c net.Conn) {
	ic := &idleConn{Conn: c, idle: p.idle}
	// lr caps each request's header; its body is read through it too.
	lr := &io.LimitedReader{R: ic}
	br := bufio.NewReader(lr)
	tr := p.transport(p.dialHostPort)
	defer tr.CloseIdleConnections()
	for {
		req := readRequest(lr, br, ic, "boxer: malformed request to the egress proxy")
		if req == nil {
			return
		}
		if req.Method == http.MethodConnect {
			p.connect(c, br, req)
			return
		}
		if !req.URL.IsAbs() || req.URL.Host == "" {
			writeStatus(ic, http.StatusBadRequest, "boxer: send this proxy absolute-form requests (GET http://host/path) or CONNECT host:port")
			return
		}
		if req.URL.Scheme != "http" {
			writeStatus(ic, http.StatusBadRequest, "boxer: only http:// URLs are forwarded: use CONNECT for "+req.URL.Scheme)
			return
		}
		if name, reason := hostName(req.URL.Host); reason != "" {
			// Go's client would send it on as its IDNA form, another name.
			dest := net.JoinHostPort(name, req.URL.Port())
			if req.URL.Port() == "" {
				dest = net.JoinHostPort(name, "80")
			}
			p.run.deny(dest, reason)
			writeStatus(ic, http.StatusForbidden, fmt.Sprintf("boxer: %s refused: %s", dest, reason))
			return
		}
		if !p.forward(ic, req, tr, nil) {
			return
		}
	}
}

// readRequest reads the next request on a connection: its header at most
// maxHeaderBytes (lr, under br, caps it), its body without cap. At the
// connection's end it returns nil; on a malformed request it answers 400
// with malformed and returns nil.
func readRequest(lr *io.LimitedReader, br *bufio.Reader, c net.Conn, malformed string) *http.Request {
	lr.N = maxHeaderBytes
	req, err := http.ReadRequest(br)
	lr.N = math.MaxInt64
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			writeStatus(c, http.StatusBadRequest, malformed)
		}
		return nil
	}
	return req
}

// transparentHTTP serves a redirected connection that speaks HTTP/1 to dst
// request by request, each checked as the first was: a program cannot send
// an allowed Host first and another one, or none, next on the same
// connection (to a CDN's address, say). peeked holds the bytes sniff read.
func (p *proxy) transparentHTTP(c net.Conn, dst netip.AddrPort, peeked []byte) {
	dial := func(ctx context.Context) (net.Conn, error) { return p.dialAddr(ctx, dst) }
	p.serveHTTP(c, peeked, dial, func(req *http.Request) (string, string) {
		name, reason := hostName(req.Host)
		if reason == "" {
			reason = p.decide(dst, name)
		}
		if reason == "" && name == "" {
			reason = p.noHost(dst, req.Host)
		}
		if reason != "" {
			return transparentDest(dst, name, reason), reason
		}
		req.URL.Host = req.Host
		if req.Host == "" {
			req.URL.Host = dst.String()
		}
		return "", ""
	})
}

// serveHTTP serves a connection that speaks HTTP/1 request by request:
// check returns the destination a request is refused for and why ("" if
// it is not), and may set its URL's host; the request is then forwarded
// through connections dial opens. peeked holds the bytes read already.
func (p *proxy) serveHTTP(c net.Conn, peeked []byte, dial func(context.Context) (net.Conn, error), check func(*http.Request) (dest, reason string)) {
	ic := &idleConn{Conn: c, idle: p.idle}
	lr := &io.LimitedReader{R: io.MultiReader(bytes.NewReader(peeked), ic)}
	br := bufio.NewReader(&skipBlankLines{r: lr})
	tr := p.transport(func(ctx context.Context, _ string) (net.Conn, error) { return dial(ctx) })
	defer tr.CloseIdleConnections()
	for {
		req := readRequest(lr, br, ic, "boxer: malformed HTTP request")
		if req == nil {
			return
		}
		if dest, reason := check(req); reason != "" {
			p.run.deny(dest, reason)
			writeStatus(ic, http.StatusForbidden, fmt.Sprintf("boxer: %s refused: %s", dest, reason))
			return
		}
		req.URL.Scheme = "http"
		if !p.forward(ic, req, tr, nil) {
			return
		}
	}
}

// forward serves a request for an http:// URL, or an https:// one of an
// intercepted connection, through tr, with the headers of inject set on
// it, and reports whether the connection may serve another.
func (p *proxy) forward(c net.Conn, req *http.Request, tr *http.Transport, inject []Injection) bool {
	out := req.WithContext(p.run.ctx)
	out.RequestURI = ""
	out.Close = false
	out.Header = req.Header.Clone()
	removeHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		// Keep the Transport from adding its own.
		out.Header["User-Agent"] = []string{""}
	}
	setInjected(out.Header, inject)
	resp, err := tr.RoundTrip(out)
	if err != nil {
		writeDialError(c, hostPort(req.URL), err)
		return false
	}
	defer resp.Body.Close()
	if len(inject) > 0 {
		p.run.intercepted.Add(1)
	}
	removeHopHeaders(resp.Header)
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	keep := !req.Close && !resp.Close && (resp.ContentLength >= 0 || chunked)
	resp.Close = !keep
	if err := resp.Write(c); err != nil {
		return false
	}
	return keep
}

// hostPort is the host:port of an http:// or https:// URL, the scheme's
// port if it names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// transport returns the Transport of one connection's requests: every
// connection it opens to host:port goes through dial.
func (p *proxy) transport(dial func(ctx context.Context, hostPort string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, hostPort string) (net.Conn, error) {
			up, err := dial(ctx, hostPort)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: up, idle: p.idle}, nil
		},
		DisableCompression:     true,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        p.idle,
		ResponseHeaderTimeout:  p.idle,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// dialHostPort connects to dest (host:port, host a name or an address) if
// the policy allows it; a refusal is a *refusedError, recorded as a denial.
func (p *proxy) dialHostPort(ctx context.Context, dest string) (net.Conn, error) {
	host, port, ok := splitDest(dest)
	if !ok {
		return nil, &refusedError{dest, http.StatusBadRequest, "give host:port, port 1 to 65535"}
	}
	var up net.Conn
	var err error
	if a, aerr := netip.ParseAddr(host); aerr == nil {
		up, err = p.dialIP(ctx, dest, a.Unmap(), port)
	} else if name, reason := hostName(host); reason != "" {
		err = &refusedError{dest, http.StatusForbidden, reason}
	} else {
		up, err = p.dialName(ctx, dest, name, port)
	}
	var re *refusedError
	if errors.As(err, &re) {
		p.run.deny(re.dest, re.reason)
	}
	return up, err
}

// splitDest splits a destination host:port; ok is false unless the port
// is 1 to 65535.
func splitDest(dest string) (host string, port uint16, ok bool) {
	host, portStr, err := net.SplitHostPort(dest)
	n, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || n == 0 {
		return "", 0, false
	}
	return host, uint16(n), true
}

// dialIP connects to an address a program asked for by number: only an
// explicit address rule allows that.
func (p *proxy) dialIP(ctx context.Context, dest string, a netip.Addr, port uint16) (net.Conn, error) {
	policy := p.run.policy()
	reason := ""
	switch {
	case a == p.self.Addr():
		reason = "boxer's gateway"
	case hardBlocked(a, p.run.local) != "":
		reason = hardBlocked(a, p.run.local)
	case policy.AddrAllowed(a, port):
	case policy.addrKnown(a):
		reason = fmt.Sprintf("port %d not allowed for address", port)
	default:
		reason = "address not allowed"
	}
	if reason != "" {
		return nil, &refusedError{dest, http.StatusForbidden, reason}
	}
	return p.dialAddr(ctx, netip.AddrPortFrom(a, port))
}

// dialName connects to name:port if the policy allows it, through the
// addresses upstream gives that are not blocked.
func (p *proxy) dialName(ctx context.Context, dest, name string, port uint16) (net.Conn, error) {
	if re := p.nameRefused(dest, name, port); re != nil {
		return nil, re
	}
	addrs, _, rcode := p.run.resolve(ctx, name)
	switch rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return nil, &refusedError{dest, http.StatusForbidden, "name has no allowed address"}
	default:
		return nil, fmt.Errorf("looking up %s: upstream DNS failed", name)
	}
	var errs []error
	for _, a := range addrs {
		up, err := p.dialAddr(ctx, netip.AddrPortFrom(a, port))
		if err == nil {
			return up, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// nameRefused returns why the policy refuses name on port (dest as the
// program asked), nil if it allows it.
func (p *proxy) nameRefused(dest, name string, port uint16) *refusedError {
	policy := p.run.policy()
	switch {
	case checkName(name) != nil || !policy.NameKnown(name):
		return &refusedError{dest, http.StatusForbidden, reasonNameNotAllowed}
	case !policy.NameAllowed(name, port):
		return &refusedError{dest, http.StatusForbidden, fmt.Sprintf("port %d not allowed for name", port)}
	}
	return nil
}

// writeDialError answers a request whose destination was refused (403 or
// 400), could not be reached or, intercepted, failed its TLS handshake
// (502).
func writeDialError(c net.Conn, dest string, err error) {
	var re *refusedError
	if errors.As(err, &re) {
		writeStatus(c, re.status, fmt.Sprintf("boxer: %s refused: %s", re.dest, re.reason))
		return
	}
	var te *upstreamTLSError
	if errors.As(err, &te) {
		writeStatus(c, http.StatusBadGateway, "boxer: "+te.Error())
		return
	}
	writeStatus(c, http.StatusBadGateway, fmt.Sprintf("boxer: %s unreachable: %v", dest, err))
}

// writeStatus answers a one-line plain-text body with status and asks the
// client to close the connection.
func writeStatus(c net.Conn, status int, body string) {
	body = strings.ReplaceAll(body, "\n", " ") + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// hopHeaders are the headers of one hop that a proxy must not forward
// (RFC 9110, section 7.6.1), besides those Connection names and Proxy-*.
var hopHeaders = []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopHeaders deletes the hop-by-hop and Proxy-* headers from h.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	for name := range h {
		if strings.HasPrefix(name, "Proxy-") {
			delete(h, name)
		}
	}
}

// idleConn closes a connection on which a read or a write waits longer
// than idle.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}
