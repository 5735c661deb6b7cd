package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// tlsRecordHandshake is the first byte of a TLS connection: the record
// type of its ClientHello.
const tlsRecordHandshake = 0x16

// upstreamTLSError is an intercepted host whose upstream TLS handshake
// failed: its certificate is not trusted, or the handshake broke off.
type upstreamTLSError struct {
	dest   string // host:port
	reason string
}

func (e *upstreamTLSError) Error() string {
	return e.dest + " " + e.reason
}

// upstreamTLSReason says why an upstream TLS handshake failed, in the
// words of the denial and the sandbox's 502.
func upstreamTLSReason(err error) string {
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		return "upstream certificate not trusted: " + cve.Err.Error()
	}
	return "upstream TLS handshake failed: " + err.Error()
}

// intercept serves the sandbox's TLS connection c to name (on port) as
// HTTPS: it terminates TLS with the run's certificate for name, reads the
// requests one by one, sets the run's injected headers on each and
// forwards it over TLS of the proxy's own, verified as a client verifies
// name, to a connection dial opens. pre holds the bytes already read from
// c, replayed first. Every request must be for name: one for another host
// is answered 421, unforwarded. It closes c.
func (p *proxy) intercept(c net.Conn, pre []byte, name string, port uint16, dial func(context.Context) (net.Conn, error)) {
	dest := net.JoinHostPort(name, strconv.Itoa(int(port)))
	cert, err := p.run.cfg.CA.leaf(name)
	if err != nil {
		p.run.deny(dest, "intercepting TLS: "+err.Error())
		reset(c)
		return
	}
	ic := &idleConn{Conn: &replayConn{Conn: c, pre: pre}, idle: p.idle}
	tc := tls.Server(ic, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		// HTTP/2 would need a server of its own: offer HTTP/1.1 alone.
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	defer tc.Close()
	ctx, cancel := context.WithTimeout(p.run.ctx, p.peek)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		// Most often a program that does not trust the run's CA.
		return
	}
	tr := p.tlsTransport(dest, name, dial)
	defer tr.CloseIdleConnections()
	inject := p.run.injections(name)
	lr := &io.LimitedReader{R: tc}
	br := bufio.NewReader(lr)
	for {
		req := readRequest(lr, br, tc, "boxer: malformed HTTP request")
		if req == nil {
			return
		}
		if req.ProtoMajor != 1 {
			// HTTP/2's preface, which ALPN did not offer.
			writeStatus(tc, http.StatusHTTPVersionNotSupported, "boxer: speak HTTP/1.1 on this connection")
			return
		}
		if req.Host == "" {
			// HTTP/1.0 may leave it out: the connection says whom it is for.
			req.Host = name
		}
		if host, _ := hostName(req.Host); host != name {
			writeStatus(tc, http.StatusMisdirectedRequest,
				fmt.Sprintf("boxer: this connection is for %s, not %s: open one of its own", name, req.Host))
			return
		}
		// Host stays as the program sent it; the URL names the connection,
		// so that errors name the port it is on.
		req.URL.Scheme, req.URL.Host = "https", dest
		if !p.forward(tc, req, tr, inject) {
			return
		}
	}
}

// tlsTransport returns the Transport of an intercepted connection's
// requests: every connection upstream is opened by dial and speaks TLS to
// name, verified against the run's roots (the host's trust store if
// none). The Transport's own TLS is not used: the dial does the
// handshake, so that a refused certificate is told from an unreachable
// host; it is recorded as a denial of dest.
func (p *proxy) tlsTransport(dest, name string, dial func(context.Context) (net.Conn, error)) *http.Transport {
	tr := p.transport(func(ctx context.Context, _ string) (net.Conn, error) { return dial(ctx) })
	plain := tr.DialContext
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := plain(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, &tls.Config{
			ServerName: name,
			RootCAs:    p.run.cfg.Roots,
			NextProtos: []string{"http/1.1"},
			MinVersion: tls.VersionTLS12,
		})
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			if p.run.ctx.Err() != nil {
				// The run is closing: no fault of the host's.
				return nil, err
			}
			te := &upstreamTLSError{dest: dest, reason: upstreamTLSReason(err)}
			p.run.denyStatus(dest, te.reason, http.StatusBadGateway)
			return nil, te
		}
		return tc, nil
	}
	return tr
}

// setInjected replaces the headers of h that inject names (whatever their
// case) with inject's values, the last rule for a header winning.
func setInjected(h http.Header, inject []Injection) {
	for _, in := range inject {
		for name := range h {
			if equalFoldASCII(name, in.Header) {
				delete(h, name)
			}
		}
	}
	for _, in := range inject {
		h[in.Header] = []string{in.Value}
	}
}
