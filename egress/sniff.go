package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// sniff reads the first bytes of a transparent connection and returns the
// name they ask for (TLS SNI or HTTP Host; "" if none or an address), the
// HTTP Host as sent ("" if none), what they are (kindTLS, kindSSLv2,
// kindHTTP, kindOther) and the bytes read. reason is set when the bytes
// claim a name that cannot be read, or one that is not ASCII (name is then
// the name as sent, escaped): without it, a slow or broken ClientHello
// would pass unchecked.
func (p *proxy) sniff(c net.Conn) (name, host string, kind int, peeked []byte, reason string) {
	c.SetReadDeadline(time.Now().Add(p.peek))
	defer c.SetReadDeadline(time.Time{})
	rec := &recorder{Conn: c}
	kind = rec.kind()
	rec.rewind()
	switch kind {
	case kindTLS:
		if name, reason = sniffTLS(rec); reason == "" {
			name, reason = hostName(name)
		}
	case kindHTTP:
		var req *http.Request
		if req, reason = sniffHTTP(rec); req != nil {
			host = req.Host
			name, reason = hostName(req.Host)
		}
	}
	return name, host, kind, rec.buf, reason
}

// The kinds of first bytes a transparent connection may send.
const (
	kindOther = iota
	kindTLS
	// kindSSLv2 is a ClientHello in SSL 2's record format, which TLS
	// servers with old settings still take (OpenSSL's SSLv23 method): it
	// has no extensions, so it never names a server.
	kindSSLv2
	kindHTTP
)

// sslv2ClientHello is the message type of an SSL 2 ClientHello, the third
// byte of its record (after a two-byte header whose first byte has the high
// bit set).
const sslv2ClientHello = 0x01

// httpMethods are the request methods that mark an HTTP/1 connection at
// once; a request line with another method is known by its version.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// kind reads as little as tells what the connection speaks: a TLS record,
// an HTTP/1 request line (after blank lines, which servers skip), whatever
// its method (servers take any token: PROPFIND, PURGE), or other. A
// known method, or a prefix of one, is waited for until the deadline, and
// counts as HTTP if cut short, so that its parse fails; any other line
// still undecided when the bytes sent so far run out is other, and late
// goes on reading it, so that a client that sends a short command and
// waits for the answer is not kept waiting.
func (r *recorder) kind() int {
	var line requestLine
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		for i, c := range buf[:n] {
			if i == 0 && len(r.buf) == n && c == tlsRecordHandshake {
				return kindTLS
			}
			if i == 0 && len(r.buf) == n && c&0x80 != 0 {
				return r.sslv2(err)
			}
			switch line.add(c) {
			case lineHTTP:
				return kindHTTP
			case lineOther:
				return kindOther
			}
		}
		switch {
		case line.knownPrefix():
			if err != nil {
				return kindHTTP
			}
		case err != nil, n > 0 && !line.fresh():
			return kindOther
		}
	}
}

// sslv2 tells, once a first byte with the high bit set is read, whether
// the connection starts with an SSL 2 ClientHello: it reads up to its
// message type, the third byte, until the deadline. Cut short, it counts
// as one (as a known method cut short counts as HTTP), so that a program
// cannot send the hello a byte at a time past the check. err is the error
// of the read that returned the first byte.
func (r *recorder) sslv2(err error) int {
	buf := make([]byte, 3)
	for len(r.buf) < 3 && err == nil {
		_, err = r.Read(buf[:3-len(r.buf)])
	}
	if len(r.buf) < 3 || r.buf[2] == sslv2ClientHello {
		return kindSSLv2
	}
	return kindOther
}

// What requestLine.add has learnt of a line so far.
const (
	lineMaybe = iota
	lineHTTP
	lineOther
)

// requestLine tells, a byte at a time, whether a connection starts with
// an HTTP/1 request line: METHOD SP TARGET SP HTTP/..., after blank lines,
// as leniently as servers read it (runs of spaces or tabs, any case).
// HTTP/2's preface (PRI * HTTP/2.0) is not one: its names are in frames.
type requestLine struct {
	part int // 0: the method, 1: the target, 2: the version
	// method holds the method's first maxMethod bytes, n counts its bytes
	// and then the target's and the version's.
	method []byte
	n      int
}

// maxMethod is the longest method requestLine keeps: enough for the known
// ones; a longer one is only counted.
const maxMethod = 8

// httpVersion starts the version of an HTTP request line.
const httpVersion = "HTTP/"

func (l *requestLine) add(c byte) int {
	space := c == ' ' || c == '\t'
	switch l.part {
	case 0:
		switch {
		case (c == '\r' || c == '\n') && l.n == 0:
			return lineMaybe
		case space && l.n > 0:
			if l.n <= maxMethod && slices.Contains(httpMethods, string(l.method)) {
				return lineHTTP
			}
			l.part, l.n = 1, 0
			return lineMaybe
		case isTokenChar(c):
			if l.n < maxMethod {
				l.method = append(l.method, c)
			}
			l.n++
			return lineMaybe
		}
	case 1:
		switch {
		case space && l.n > 0:
			l.part, l.n = 2, 0
			return lineMaybe
		case space:
			return lineMaybe
		case c > ' ' && c < 0x7f:
			l.n++
			return lineMaybe
		}
	default:
		switch {
		case space && l.n == 0:
			return lineMaybe
		case c|0x20 != httpVersion[l.n]|0x20:
			return lineOther
		case l.n+1 < len(httpVersion):
			l.n++
			return lineMaybe
		case string(l.method) == "PRI":
			return lineOther
		}
		return lineHTTP
	}
	return lineOther
}

// fresh reports whether the line has had no byte but blank lines.
func (l *requestLine) fresh() bool {
	return l.part == 0 && l.n == 0
}

// knownPrefix reports whether the line so far is a known method or the
// start of one.
func (l *requestLine) knownPrefix() bool {
	return l.part == 0 && l.n > 0 && l.n <= maxMethod && slices.ContainsFunc(httpMethods, func(m string) bool {
		return strings.HasPrefix(m, string(l.method))
	})
}

// isTokenChar reports whether c may be in a token, such as a method (RFC
// 9110, section 5.6.2).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
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

// reasonLateLine is why the proxy cuts a connection whose first line
// turns out to be an HTTP request line only in bytes sent after those it
// read for a name.
const reasonLateLine = "HTTP request line completed after the bytes read for its name"

// errLate ends the splice of a lateConn that started TLS or HTTP.
var errLate = errors.New(reasonLate)

// lateConn is the sandbox's side of a connection spliced before its first
// bytes told what it speaks: the program sent nothing, or the start of a
// line that could still be an HTTP request line, within the peek timeout,
// as the client of a protocol where the server speaks first does, or one
// that sends a short command and waits. What it sends next must not start
// TLS or complete an HTTP request line, whose name (SNI, Host) would then
// go unchecked: a program could wait the timeout out and name any site of
// an allowed address. Bytes pass as they come: the connection is cut at
// the TLS record's first byte (or a first byte with the high bit set, an
// SSL 2 ClientHello's), or at the end of the request line, before
// which no server acts. deny records the refusal.
type lateConn struct {
	net.Conn
	deny func()
	// fresh: no byte yet, TLS may still start.
	fresh bool
	line  requestLine
	done  bool
}

func (l *lateConn) Read(b []byte) (int, error) {
	n, err := l.Conn.Read(b)
	if l.done || n == 0 {
		return n, err
	}
	for i, c := range b[:n] {
		state := l.line.add(c)
		if i == 0 && l.fresh && (c == tlsRecordHandshake || c&0x80 != 0) {
			// TLS, or what may be an SSL 2 ClientHello.
			state = lineHTTP
		}
		switch state {
		case lineHTTP:
			l.deny()
			reset(l.Conn)
			return 0, errLate
		case lineOther:
			l.done = true
			return n, err
		}
	}
	l.fresh = false
	return n, err
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
// proxy stopped waiting (peeked is empty) or a line still undecided, c
// itself if its first bytes told what it speaks.
func (p *proxy) late(c net.Conn, peeked []byte, dest string) net.Conn {
	reason := reasonLate
	if len(peeked) > 0 {
		reason = reasonLateLine
	}
	l := &lateConn{Conn: c, deny: func() { p.run.deny(dest, reason) }, fresh: len(peeked) == 0}
	for _, b := range peeked {
		if l.line.add(b) != lineMaybe {
			return c
		}
	}
	return l
}
