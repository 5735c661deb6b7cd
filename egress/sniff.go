package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// sniff reads the first bytes of a transparent connection and returns the
// name they ask for (TLS SNI or HTTP Host; "" if none or an address), the
// HTTP Host as sent ("" if none), what they are (kindTLS, kindHTTP,
// kindOther) and the bytes read. reason is set when the bytes claim a name
// that cannot be read: without it, a slow or broken ClientHello would pass
// unchecked.
func (p *proxy) sniff(c net.Conn) (name, host string, kind int, peeked []byte, reason string) {
	c.SetReadDeadline(time.Now().Add(p.peek))
	defer c.SetReadDeadline(time.Time{})
	rec := &recorder{Conn: c}
	kind = rec.kind()
	rec.rewind()
	switch kind {
	case kindTLS:
		name, reason = sniffTLS(rec)
		name = hostName(name)
	case kindHTTP:
		var req *http.Request
		if req, reason = sniffHTTP(rec); req != nil {
			host, name = req.Host, hostName(req.Host)
		}
	}
	return name, host, kind, rec.buf, reason
}

// hostName returns the name of a Host header or an SNI, lower-case and
// without its port; "" for an address, which is no name: the destination
// address decides alone.
func hostName(host string) string {
	host = hostPart(host)
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	return normalName(host)
}

// hostPart returns a Host header or an SNI without its port and an IPv6
// address's brackets.
func hostPart(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// The kinds of first bytes a transparent connection may send.
const (
	kindOther = iota
	kindTLS
	kindHTTP
)

// httpMethods are the request methods that mark an HTTP/1 connection.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// kind reads as little as tells what the connection speaks: a TLS record,
// an HTTP request line (after blank lines, which servers skip), or other.
// A prefix of a method cut short by the deadline counts as HTTP, so that
// its parse fails rather than it pass as another protocol.
func (r *recorder) kind() int {
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			if len(r.buf) > 0 && couldBeMethod(r.buf) {
				return kindHTTP
			}
			return kindOther
		}
		if len(r.buf) == 1 && b[0] == 0x16 {
			return kindTLS
		}
		line := strings.TrimLeft(string(r.buf), "\r\n")
		if line == "" {
			continue
		}
		if method, _, ok := strings.Cut(line, " "); ok {
			if isMethod(method) {
				return kindHTTP
			}
			return kindOther
		}
		if !couldBeMethod(r.buf) {
			return kindOther
		}
	}
}

// couldBeMethod reports whether b (less blank lines) starts a request line.
func couldBeMethod(b []byte) bool {
	s := strings.TrimLeft(string(b), "\r\n")
	for _, m := range httpMethods {
		if strings.HasPrefix(m, s) || strings.HasPrefix(s, m+" ") {
			return true
		}
	}
	return false
}

func isMethod(s string) bool {
	for _, m := range httpMethods {
		if s == m {
			return true
		}
	}
	return false
}

// errSniffed aborts the handshake sniffTLS starts once it has the hello.
var errSniffed = errors.New("client hello read")

// sniffTLS returns the server name of the ClientHello that rec holds, ""
// if it names none; reason is set when rec holds no readable ClientHello.
func sniffTLS(rec *recorder) (name, reason string) {
	var hello *tls.ClientHelloInfo
	srv := tls.Server(rec, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = h
			return nil, errSniffed
		},
	})
	srv.Handshake()
	if hello == nil {
		return "", "unreadable TLS ClientHello"
	}
	return hello.ServerName, ""
}

// sniffHTTP returns the HTTP request whose header rec holds; reason is set
// when rec holds no readable request.
func sniffHTTP(rec *recorder) (*http.Request, string) {
	req, err := http.ReadRequest(bufio.NewReader(&skipBlankLines{r: rec}))
	if err != nil {
		return nil, "unreadable HTTP request"
	}
	return req, ""
}

// skipBlankLines reads past the blank lines before a request line, which
// http.ReadRequest refuses and servers skip.
type skipBlankLines struct {
	r     io.Reader
	found bool
}

func (s *skipBlankLines) Read(b []byte) (int, error) {
	if s.found {
		return s.r.Read(b)
	}
	for {
		n, err := s.r.Read(b)
		i := 0
		for i < n && (b[i] == '\r' || b[i] == '\n') {
			i++
		}
		if i < n {
			s.found = true
			return copy(b, b[i:n]), err
		}
		if err != nil {
			return 0, err
		}
	}
}

// recorder reads a connection and keeps what it read (up to maxPeek) so
// that it can be read again (rewind) and replayed upstream. Writes are
// dropped: sniffTLS's handshake answers nothing.
type recorder struct {
	net.Conn
	buf []byte
	pos int
	err error // the last read's
}

func (r *recorder) Read(b []byte) (int, error) {
	if r.pos < len(r.buf) {
		n := copy(b, r.buf[r.pos:])
		r.pos += n
		return n, nil
	}
	room := maxPeek - len(r.buf)
	if room <= 0 {
		return 0, errors.New("first bytes larger than 16 KiB")
	}
	if len(b) > room {
		b = b[:room]
	}
	n, err := r.Conn.Read(b)
	r.buf = append(r.buf, b[:n]...)
	r.pos = len(r.buf)
	r.err = err
	return n, err
}

func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }

// rewind makes the next Read start again at the first byte.
func (r *recorder) rewind() { r.pos = 0 }

// reasonLate is why the proxy cuts a connection that starts TLS or HTTP
// only after the wait for its first bytes.
const reasonLate = "TLS or HTTP started after the wait for its name"

// errLate ends the splice of a lateConn that started TLS or HTTP.
var errLate = errors.New(reasonLate)

// lateConn is the sandbox's side of a connection spliced before the
// program sent a byte: it waited out the peek timeout, as the client of a
// protocol where the server speaks first does. Its first bytes must not
// start TLS or HTTP, whose name (SNI, Host) would then go unchecked: a
// program could wait the timeout out and name any site of an allowed
// address. deny records the refusal.
type lateConn struct {
	net.Conn
	deny    func()
	checked bool
	pending []byte
}

func (l *lateConn) Read(b []byte) (int, error) {
	if !l.checked {
		rec := &recorder{Conn: l.Conn}
		kind := rec.kind()
		if len(rec.buf) == 0 {
			// Nothing yet: the idle deadline or the end, for the caller.
			return 0, rec.err
		}
		l.checked = true
		if kind != kindOther {
			l.deny()
			reset(l.Conn)
			return 0, errLate
		}
		l.pending = rec.buf
	}
	if len(l.pending) > 0 {
		n := copy(b, l.pending)
		l.pending = l.pending[n:]
		return n, nil
	}
	return l.Conn.Read(b)
}

// CloseWrite half-closes the connection, as splice does when upstream
// has finished.
func (l *lateConn) CloseWrite() error {
	if cw, ok := l.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// late returns c as a lateConn if the program sent nothing before the
// proxy stopped waiting (peeked is empty), c itself if it did.
func (p *proxy) late(c net.Conn, peeked []byte, dest string) net.Conn {
	if len(peeked) > 0 {
		return c
	}
	return &lateConn{Conn: c, deny: func() { p.run.deny(dest, reasonLate) }}
}
