package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// upstreamDNS is the address the tests configure as the upstream resolver;
// testDial maps it onto a test server on loopback. Nothing is ever sent to
// it (203.0.113.0/24 is TEST-NET-3).
const upstreamDNS = "203.0.113.53:53"

var loopback = netip.MustParseAddr("127.0.0.1")

// testUpstream is a DNS server on loopback standing for the upstream
// resolver: records maps a name (lower case, no trailing dot) to its
// answers: addresses, or "cname:TARGET". A name with "tc:" before it
// answers truncated over UDP.
type testUpstream struct {
	addr    string
	queries atomic.Int64
	records map[string][]string
}

func startUpstream(t *testing.T, records map[string][]string) *testUpstream {
	t.Helper()
	u := &testUpstream{records: records}
	var pc net.PacketConn
	var ln net.Listener
	for range 10 {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatalf("listening for the test upstream: %v", err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		pc = nil
	}
	if pc == nil {
		t.Fatal("no port free on UDP and TCP for the test upstream")
	}
	u.addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: u}, {Listener: ln, Handler: u}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return u
}

func (u *testUpstream) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	u.queries.Add(1)
	reply := new(dns.Msg)
	reply.SetReply(req)
	q := req.Question[0]
	name := normalName(q.Name)
	answers, ok := u.records[name]
	_, overTCP := w.LocalAddr().(*net.TCPAddr)
	if tc, found := u.records["tc:"+name]; found {
		if !overTCP {
			reply.Truncated = true
			w.WriteMsg(reply)
			return
		}
		answers, ok = tc, true
	}
	if !ok {
		reply.SetRcode(req, dns.RcodeNameError)
		w.WriteMsg(reply)
		return
	}
	owner := q.Name
	for _, a := range answers {
		if target, ok := strings.CutPrefix(a, "cname:"); ok {
			rr, _ := dns.NewRR(fmt.Sprintf("%s 300 IN CNAME %s.", owner, target))
			reply.Answer = append(reply.Answer, rr)
			owner = target + "."
			continue
		}
		if q.Qtype == dns.TypeA {
			rr, _ := dns.NewRR(fmt.Sprintf("%s 300 IN A %s", owner, a))
			reply.Answer = append(reply.Answer, rr)
		}
	}
	w.WriteMsg(reply)
}

// testDial returns a Dialer that reaches the addresses of routes (the
// configured ones, such as 203.0.113.10:443) at the loopback addresses they
// map to, and refuses any other: a test never sends a packet off loopback.
func testDial(routes map[string]string) (Dialer, *atomic.Int64) {
	var dials atomic.Int64
	var d net.Dialer
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.Add(1)
		to, ok := routes[address]
		if !ok {
			return nil, fmt.Errorf("test dial: no route to %s", address)
		}
		return d.DialContext(ctx, network, to)
	}, &dials
}

// destinations is the origDst hook of a test gateway: a connection's
// original destination is what the test set for its client address, or,
// if it set none, the proxy itself (explicit mode).
type destinations struct {
	mu sync.Mutex
	m  map[string]netip.AddrPort
}

func (d *destinations) set(client net.Addr, dst netip.AddrPort) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]netip.AddrPort{}
	}
	d.m[client.String()] = dst
}

func (d *destinations) origDst(c net.Conn) (netip.AddrPort, error) {
	// The client sets its destination right after connecting: wait for it.
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		d.mu.Lock()
		dst, ok := d.m[c.RemoteAddr().String()]
		d.mu.Unlock()
		if ok {
			return dst, nil
		}
		if time.Now().After(deadline) {
			return c.LocalAddr().(*net.TCPAddr).AddrPort(), nil
		}
		time.Sleep(time.Millisecond)
	}
}

type testGateway struct {
	*Gateway
	dsts *destinations
	t    *testing.T
}

// startGateway starts a gateway on loopback under cfg; its upstream DNS is
// upstreamDNS unless cfg names another.
func startGateway(t *testing.T, cfg Config, tweak func(g *Gateway)) *testGateway {
	t.Helper()
	g, err := Listen(loopback)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	tg := &testGateway{Gateway: g, dsts: &destinations{}, t: t}
	g.origDst = tg.dsts.origDst
	if tweak != nil {
		tweak(g)
	}
	if cfg.UpstreamDNS == "" {
		cfg.UpstreamDNS = upstreamDNS
	}
	if cfg.Local == nil {
		cfg.Local = func(netip.Addr) bool { return false }
	}
	g.Start(cfg)
	t.Cleanup(func() { g.Close() })
	return tg
}

// dial connects to the proxy as a connection redirected from dst would.
func (g *testGateway) dial(dst string) net.Conn {
	g.t.Helper()
	c, err := net.Dial("tcp", g.proxyAddr())
	if err != nil {
		g.t.Fatalf("dialing the proxy: %v", err)
	}
	g.dsts.set(c.LocalAddr(), netip.MustParseAddrPort(dst))
	g.t.Cleanup(func() { c.Close() })
	return c
}

func (g *testGateway) proxyAddr() string {
	return netip.AddrPortFrom(loopback, g.ProxyPort()).String()
}

// query asks the gateway's resolver over network ("udp" or "tcp").
func (g *testGateway) query(network, name string, qtype uint16) *dns.Msg {
	g.t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(m, netip.AddrPortFrom(loopback, g.DNSPort()).String())
	if err != nil {
		g.t.Fatalf("querying %s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return resp
}

// aRecords returns the addresses and TTLs of the A records of a reply.
func aRecords(m *dns.Msg) (addrs []string, ttls []uint32) {
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			addrs = append(addrs, a.A.String())
			ttls = append(ttls, a.Hdr.Ttl)
		}
	}
	return addrs, ttls
}

// hasDenial reports whether r records dest refused for reason.
func hasDenial(r Report, dest, reason string) bool {
	for _, d := range r.Denied {
		if d.Destination == dest && d.Reason == reason {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkGoroutines fails the test if, after it, more goroutines run than
// before it (with some slack for the runtime's and net/http's own).
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before+2 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines: %d after, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// connectOnce sends one CONNECT for dest to the proxy at addr and returns
// the answer and its body, the connection closed.
func connectOnce(t *testing.T, addr, dest string) (*http.Response, []byte) {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	fmt.Fprintf(raw, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", dest, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// connectTunnel opens a tunnel to dest through the proxy at addr and
// returns its connection, the proxy's 200 read.
func connectTunnel(t *testing.T, addr, dest string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	// Byte by byte, so that nothing of the tunnel is read with the answer.
	var head []byte
	b := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := c.Read(b); err != nil {
			t.Fatalf("CONNECT %s: %v after %q", dest, err, head)
		}
		head = append(head, b[0])
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) {
		t.Fatalf("CONNECT %s = %q, want 200", dest, head)
	}
	c.SetDeadline(time.Time{})
	return c
}
