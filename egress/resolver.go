package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
)

const (
	// upstreamTimeout bounds one lookup upstream, UDP and a TCP retry.
	upstreamTimeout = 3 * time.Second
	// maxTTL caps the TTL of the answers: a name's addresses are checked
	// again (and remembered again) at least this often.
	maxTTL = 60
	// maxQueryRate caps the sandbox's queries a second; over it, REFUSED.
	maxQueryRate = 200
	// maxLookups caps the lookups in flight upstream; over it, SERVFAIL.
	maxLookups = 32
	// maxCNAMEs bounds the CNAME chain followed in an answer.
	maxCNAMEs = 8
	// upstreamUDPSize is the EDNS0 buffer size of upstream queries (the
	// DNS flag day 2020 value, which avoids fragmentation).
	upstreamUDPSize = 1232
)

// errNoUpstream is a lookup's error when the config names no upstream.
var errNoUpstream = errors.New("no upstream DNS server configured")

// resolver is a sandbox's DNS server: it answers A queries for the names
// the policy allows, with the addresses upstream gives that are not
// blocked, and nothing else.
type resolver struct {
	run     *run
	limit   rateLimit
	lookups chan struct{}
}

// newResolver returns the resolver of a run.
func newResolver(r *run) *resolver {
	return &resolver{
		run:     r,
		limit:   rateLimit{max: maxQueryRate},
		lookups: make(chan struct{}, maxLookups),
	}
}

// ServeDNS answers one query from the sandbox.
func (s *resolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	reply := s.answer(req)
	if o := req.IsEdns0(); o != nil {
		reply.SetEdns0(upstreamUDPSize, false)
	}
	reply.Truncate(replySize(w, req))
	w.WriteMsg(reply)
}

// replySize is the largest reply the client takes: 64 KiB over TCP, its
// EDNS0 size or 512 bytes over UDP.
func replySize(w dns.ResponseWriter, req *dns.Msg) int {
	if _, ok := w.LocalAddr().(*net.TCPAddr); ok {
		return dns.MaxMsgSize
	}
	if o := req.IsEdns0(); o != nil {
		return int(max(dns.MinMsgSize, min(o.UDPSize(), upstreamUDPSize)))
	}
	return dns.MinMsgSize
}

// answer returns the reply to req.
func (s *resolver) answer(req *dns.Msg) *dns.Msg {
	reply := new(dns.Msg)
	switch {
	case !s.limit.allow(time.Now()):
		s.run.deny("dns", fmt.Sprintf("more than %d queries a second", maxQueryRate))
		return reply.SetRcode(req, dns.RcodeRefused)
	case req.Opcode != dns.OpcodeQuery:
		return reply.SetRcode(req, dns.RcodeNotImplemented)
	case req.Response || len(req.Question) != 1:
		return reply.SetRcode(req, dns.RcodeFormatError)
	}
	reply.RecursionAvailable = true
	q := req.Question[0]
	name := normalName(q.Name)
	if q.Qclass != dns.ClassINET {
		return reply.SetRcode(req, dns.RcodeRefused)
	}
	if checkName(name) != nil || !s.run.policy().NameKnown(name) {
		s.run.deny(name, "name not allowed")
		return reply.SetRcode(req, dns.RcodeNameError)
	}
	if q.Qtype != dns.TypeA {
		// IPv6 has no route out of the sandbox, and no other type is
		// forwarded: a TXT or NULL answer would be a tunnel.
		return reply.SetReply(req)
	}
	return s.answerA(req, name)
}

// answerA answers an A query for an allowed name from upstream.
func (s *resolver) answerA(req *dns.Msg, name string) *dns.Msg {
	reply := new(dns.Msg)
	reply.RecursionAvailable = true
	select {
	case s.lookups <- struct{}{}:
		defer func() { <-s.lookups }()
	default:
		return reply.SetRcode(req, dns.RcodeServerFailure)
	}
	addrs, ttl, rcode := s.run.resolve(s.run.ctx, name)
	if rcode != dns.RcodeSuccess {
		return reply.SetRcode(req, rcode)
	}
	if !s.run.remember(name, addrs) {
		s.run.deny(name, fmt.Sprintf("too many names resolved (max %d)", maxResolvedNames))
		return reply.SetRcode(req, dns.RcodeRefused)
	}
	reply.SetReply(req)
	for _, a := range addrs {
		reply.Answer = append(reply.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl},
			A:   a.AsSlice(),
		})
	}
	return reply
}

// resolve looks name up upstream and returns the addresses the sandbox may
// reach, with their TTL (at most maxTTL), or the rcode to answer instead:
// NXDOMAIN when none is left, SERVFAIL when upstream fails. Each address
// dropped is recorded as a denial.
func (r *run) resolve(ctx context.Context, name string) ([]netip.Addr, uint32, int) {
	resp, err := r.lookup(ctx, name)
	if err != nil {
		return nil, 0, dns.RcodeServerFailure
	}
	switch resp.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return nil, 0, dns.RcodeNameError
	default:
		return nil, 0, dns.RcodeServerFailure
	}
	found, ttl := addrsOf(resp, name)
	var addrs []netip.Addr
	for _, a := range found {
		if reason := r.unreachable(a); reason != "" {
			r.deny(name, fmt.Sprintf("resolves to %s: %s", a, reason))
			continue
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, 0, dns.RcodeNameError
	}
	return addrs, min(ttl, maxTTL), dns.RcodeSuccess
}

// unreachable returns why the sandbox may not reach a through a name, or
// "": hard-blocked addresses never, blocked ones only when an explicit
// address rule allows them.
func (r *run) unreachable(a netip.Addr) string {
	if reason := hardBlocked(a, r.local); reason != "" {
		return reason
	}
	if reason := Blocked(a); reason != "" && !r.policy().addrKnown(a) {
		return reason
	}
	return ""
}

// addrsOf returns the A records of name in an answer, following its CNAME
// chain, without duplicates, and their smallest TTL.
func addrsOf(resp *dns.Msg, name string) ([]netip.Addr, uint32) {
	var addrs []netip.Addr
	ttl := uint32(maxTTL)
	owner := dns.Fqdn(name)
	for range maxCNAMEs + 1 {
		next := ""
		for _, rr := range resp.Answer {
			if !equalFoldASCII(rr.Header().Name, owner) {
				continue
			}
			switch rr := rr.(type) {
			case *dns.A:
				a, ok := netip.AddrFromSlice(rr.A)
				if ok && !containsAddr(addrs, a.Unmap()) {
					addrs = append(addrs, a.Unmap())
					ttl = min(ttl, rr.Hdr.Ttl)
				}
			case *dns.CNAME:
				next = rr.Target
				ttl = min(ttl, rr.Hdr.Ttl)
			}
		}
		if len(addrs) > 0 || next == "" {
			break
		}
		owner = next
	}
	return addrs, ttl
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, b := range addrs {
		if a == b {
			return true
		}
	}
	return false
}

// lookup asks the upstream server for name's A records, over UDP and
// again over TCP if the answer is truncated.
func (r *run) lookup(ctx context.Context, name string) (*dns.Msg, error) {
	if r.cfg.UpstreamDNS == "" {
		return nil, errNoUpstream
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamTimeout)
	defer cancel()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	q.SetEdns0(upstreamUDPSize, false)
	resp, err := r.exchange(ctx, "udp", q)
	if err == nil && resp.Truncated {
		resp, err = r.exchange(ctx, "tcp", q)
	}
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s: %w", r.cfg.UpstreamDNS, name, err)
	}
	if len(resp.Question) != 1 || !equalFoldASCII(resp.Question[0].Name, q.Question[0].Name) {
		return nil, fmt.Errorf("asking %s for %s: the answer is for another question", r.cfg.UpstreamDNS, name)
	}
	return resp, nil
}

// exchange sends q to the upstream server over network, through the
// run's dialer, and returns its answer.
func (r *run) exchange(ctx context.Context, network string, q *dns.Msg) (*dns.Msg, error) {
	c, err := r.dial(ctx, network, r.cfg.UpstreamDNS)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// The dialer's conn may not watch ctx: a deadline in the past unblocks
	// it when the run closes.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	client := &dns.Client{Net: network, Timeout: upstreamTimeout}
	resp, _, err := client.ExchangeWithConnContext(ctx, q, &dns.Conn{Conn: c})
	return resp, err
}

// rateLimit allows at most max events in each second.
type rateLimit struct {
	max   int
	mu    sync.Mutex
	start time.Time
	n     int
}

// allow reports whether one more event at now fits in the limit.
func (l *rateLimit) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= time.Second {
		l.start, l.n = now, 0
	}
	l.n++
	return l.n <= l.max
}
