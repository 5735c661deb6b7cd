package fakenet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Net is a fake internet in a network namespace of its own.
type Net struct {
	// Netns is the path of the namespace's bind mount: boxer's proxy dials
	// upstream from inside it (--egress-netns).
	Netns string
	// DNS is the DNS server's address, "203.0.113.53:53" (--dns-upstream).
	DNS string
	// CAPEM is the test CA's certificate in PEM; CAFile holds the same.
	CAPEM  []byte
	CAFile string

	ns      netns.NsHandle
	mounted bool // Netns is a bind mount Start made
	created bool // Netns is a file Start made

	hits     hits
	received headerLog
	served   siteLog
	resolver resolver
	echo     echoServer
	lns      []io.Closer // every socket, closed again at Close
	httpSrvs []*http.Server
	dnsSrvs  []*dns.Server
	wg       sync.WaitGroup // the serving goroutines

	closeOnce sync.Once
	closeErr  error
}

// Start makes the namespace, its links and addresses, and starts every
// server in it. dir is a directory the caller owns (a test's t.TempDir());
// the namespace is bind-mounted at dir/netns and the CA written to
// dir/ca.pem. Close undoes all of it.
func Start(dir string) (_ *Net, retErr error) {
	n := &Net{
		Netns:  filepath.Join(dir, "netns"),
		DNS:    hostPort(DNSAddr, DNSPort),
		CAFile: filepath.Join(dir, "ca.pem"),
		ns:     netns.None(),
	}
	defer func() {
		if retErr != nil {
			if err := n.Close(); err != nil {
				retErr = errors.Join(retErr, fmt.Errorf("cleaning up: %w", err))
			}
		}
	}()

	if err := n.newNamespace(); err != nil {
		return nil, err
	}
	ns, err := netns.GetFromPath(n.Netns)
	if err != nil {
		return nil, fmt.Errorf("opening namespace %s: %w", n.Netns, err)
	}
	n.ns = ns
	if err := n.setupLinks(); err != nil {
		return nil, err
	}

	caPEM, leaf, err := newCerts()
	if err != nil {
		return nil, err
	}
	n.CAPEM = caPEM
	if err := os.WriteFile(n.CAFile, caPEM, 0o644); err != nil {
		return nil, fmt.Errorf("writing CA certificate: %w", err)
	}
	badLeaf, err := selfSigned(BadCertName)
	if err != nil {
		return nil, err
	}
	handlers, err := newHandlers(&n.received, &n.served)
	if err != nil {
		return nil, err
	}
	if err := n.serve(handlers, map[serverKind]tls.Certificate{kindBadCert: badLeaf}, leaf); err != nil {
		return nil, err
	}
	return n, nil
}

// handlers are the HTTP handlers by kind of server.
type handlers map[serverKind]http.Handler

func newHandlers(received *headerLog, served *siteLog) (handlers, error) {
	wheel, err := buildWheel()
	if err != nil {
		return nil, fmt.Errorf("building wheel: %w", err)
	}
	tarball, err := buildTarball()
	if err != nil {
		return nil, fmt.Errorf("building npm tarball: %w", err)
	}
	npm, err := npmHandler(tarball)
	if err != nil {
		return nil, err
	}
	return handlers{
		kindHTTP:      http.HandlerFunc(hello),
		kindHTTPS:     http.HandlerFunc(hello),
		kindWeb:       webHandler(received),
		kindBadCert:   http.HandlerFunc(hello),
		kindPyPI:      pypiHandler(wheel),
		kindNPM:       npm,
		kindShared:    sharedHandler(served),
		kindSharedTLS: sharedHandler(served),
	}, nil
}

// serve opens every server's sockets inside the namespace and starts
// serving on them, over TLS with leaf but for the kinds of own.
func (n *Net) serve(hs handlers, own map[serverKind]tls.Certificate, leaf tls.Certificate) error {
	type socket struct {
		listener
		tcp net.Listener
		udp net.PacketConn
	}
	var socks []socket
	err := n.Do(func() error {
		for _, l := range listeners {
			s := socket{listener: l}
			tcp, err := net.Listen("tcp", l.addr)
			if err != nil {
				return fmt.Errorf("listening on %s: %w", l.addr, err)
			}
			n.lns = append(n.lns, tcp)
			s.tcp = countingListener{Listener: tcp, hits: &n.hits}
			if l.kind == kindDNS {
				udp, err := net.ListenPacket("udp", l.addr)
				if err != nil {
					return fmt.Errorf("listening on udp %s: %w", l.addr, err)
				}
				n.lns = append(n.lns, udp)
				s.udp = udp
			}
			socks = append(socks, s)
		}
		return nil
	})
	if err != nil {
		return err
	}

	servers := map[serverKind]*http.Server{}
	for kind, h := range hs {
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 30 * time.Second,
			// A client that refuses the certificate is what many tests
			// are about: don't log each handshake it breaks off.
			ErrorLog: log.New(io.Discard, "", 0),
		}
		if kind != kindHTTP && kind != kindShared {
			cert, ok := own[kind]
			if !ok {
				cert = leaf
			}
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		}
		servers[kind] = srv
		n.httpSrvs = append(n.httpSrvs, srv)
	}
	for _, s := range socks {
		switch s.kind {
		case kindEcho:
			n.echo.serve(s.tcp)
		case kindDNS:
			if err := n.serveDNS(&dns.Server{Listener: s.tcp, Handler: &n.resolver}); err != nil {
				return fmt.Errorf("serving DNS on tcp %s: %w", s.addr, err)
			}
			if err := n.serveDNS(&dns.Server{PacketConn: s.udp, Handler: &n.resolver}); err != nil {
				return fmt.Errorf("serving DNS on udp %s: %w", s.addr, err)
			}
		case kindHTTP, kindShared:
			srv := servers[s.kind]
			n.goServe(func() error { return srv.Serve(s.tcp) })
		default:
			srv := servers[s.kind]
			n.goServe(func() error { return srv.ServeTLS(s.tcp, "", "") })
		}
	}
	return nil
}

func (n *Net) goServe(serve func() error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = serve()
	}()
}

// serveDNS starts srv and returns once it is serving: a dns.Server that
// has not started yet cannot be shut down.
func (n *Net) serveDNS(srv *dns.Server) error {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	errc := make(chan error, 1)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		errc <- srv.ActivateAndServe()
	}()
	select {
	case <-started:
		n.dnsSrvs = append(n.dnsSrvs, srv)
		return nil
	case err := <-errc:
		return err
	}
}

// Queries returns how many DNS questions the server was asked about names
// ending in suffix, matched by whole labels ("web.test" counts web.test and
// a.web.test, not notweb.test; ".web.test" only the names under it; ""
// every question), case-insensitive, a trailing dot ignored. A lookup of
// both families asks two questions.
func (n *Net) Queries(suffix string) int {
	return n.resolver.Queries(suffix)
}

// Received returns the headers of the requests web.test's HTTPS servers
// (ports 443 and 8443) received for path, in the order they came; they
// are copies.
func (n *Net) Received(path string) []http.Header {
	return n.received.get(path)
}

// Served returns how many requests the shared host answered as site
// (CDNName or EvilName): a refused program's answer would count.
func (n *Net) Served(site string) int {
	return n.served.get(site)
}

// Hits returns how many TCP connections the servers accepted on addr
// ("ip:port", "[v6]:port"), to prove that a refused destination was never
// reached. An address no server listens on has none.
func (n *Net) Hits(addr string) int {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0
	}
	return n.hits.get(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
}

// TrustEnv returns the environment a sandbox needs to trust the CA file at
// path (a path inside the sandbox): OpenSSL, Python requests, pip, curl and
// Node.js each read their own variable.
func (n *Net) TrustEnv(path string) []string {
	return []string{
		"SSL_CERT_FILE=" + path,
		"REQUESTS_CA_BUNDLE=" + path,
		"PIP_CERT=" + path,
		"CURL_CA_BUNDLE=" + path,
		"NODE_EXTRA_CA_CERTS=" + path,
	}
}

// Do runs fn on an OS thread inside the namespace, so that the sockets fn
// creates belong to it. fn runs on another goroutine: it must not call
// t.Fatal or runtime.Goexit.
func (n *Net) Do(fn func() error) error {
	return onThread(func() error {
		if err := netns.Set(n.ns); err != nil {
			return fmt.Errorf("entering namespace %s: %w", n.Netns, err)
		}
		return fn()
	})
}

// DialContext connects to address from inside the namespace, resolving
// names with the namespace's DNS server. It is an egress.Dialer.
func (n *Net) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d := net.Dialer{Resolver: n.Resolver()}
	var c net.Conn
	err := n.Do(func() error {
		var err error
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// Resolver returns a resolver that asks the namespace's DNS server.
func (n *Net) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			var c net.Conn
			err := n.Do(func() error {
				var err error
				c, err = d.DialContext(ctx, network, n.DNS)
				return err
			})
			return c, err
		},
	}
}

// HTTPClient returns a client that connects from inside the namespace,
// resolves with its DNS server and trusts the test CA. It uses no proxy.
func (n *Net) HTTPClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(n.CAPEM)
	return &http.Client{
		Transport: &http.Transport{
			DialContext:     n.DialContext,
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		},
		Timeout: 30 * time.Second,
	}
}

// Close stops every server, waits for their goroutines, and unmounts and
// removes the namespace and the CA file. It may be called more than once.
func (n *Net) Close() error {
	n.closeOnce.Do(func() { n.closeErr = n.close() })
	return n.closeErr
}

func (n *Net) close() error {
	var errs []error
	for _, srv := range n.httpSrvs {
		if err := srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stopping HTTP server: %w", err))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range n.dnsSrvs {
		if err := srv.ShutdownContext(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping DNS server: %w", err))
		}
	}
	if err := n.echo.close(); err != nil {
		errs = append(errs, fmt.Errorf("stopping echo server: %w", err))
	}
	// Every server closes its own; this catches sockets opened before a
	// failed Start handed them to a server.
	for _, l := range n.lns {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing socket: %w", err))
		}
	}
	n.wg.Wait()

	if n.ns.IsOpen() {
		if err := n.ns.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing namespace: %w", err))
		}
	}
	if n.mounted {
		if err := unix.Unmount(n.Netns, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmounting namespace %s: %w", n.Netns, err))
		}
	}
	if n.created {
		if err := os.Remove(n.Netns); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", n.Netns, err))
		}
	}
	if n.CAPEM != nil {
		if err := os.Remove(n.CAFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", n.CAFile, err))
		}
	}
	return errors.Join(errs...)
}

// onThread runs fn on a fresh goroutine locked to its OS thread, which fn
// may move into another network namespace. The thread is moved back after
// fn; if that fails, the goroutine exits still locked and Go ends the
// thread rather than let other goroutines run in the wrong namespace.
func onThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("getting current namespace: %w", err)
			return
		}
		defer orig.Close()
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("returning to the original namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
