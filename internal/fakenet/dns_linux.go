package fakenet

import (
	"net"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// resolver answers A and AAAA questions from the zone's table, NXDOMAIN for
// any other name, and counts every question it is asked.
type resolver struct {
	mu      sync.Mutex
	queries map[string]int // by lower-case name without the trailing dot
}

var _ dns.Handler = (*resolver)(nil)

func (r *resolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, q := range req.Question {
		name := normalise(q.Name)
		r.count(name)
		h, ok := lookup(name)
		if !ok {
			m.Rcode = dns.RcodeNameError
			m.Ns = append(m.Ns, soa())
			continue
		}
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Rrtype: q.Qtype, Ttl: recordTTL}
		switch q.Qtype {
		case dns.TypeA:
			for _, a := range h.a {
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IP(a.AsSlice())})
			}
		case dns.TypeAAAA:
			for _, a := range h.aaaa {
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: net.IP(a.AsSlice())})
			}
		}
		if len(m.Answer) == 0 {
			// NODATA: the name exists, without records of this type.
			m.Ns = append(m.Ns, soa())
		}
	}
	_ = w.WriteMsg(m)
}

func (r *resolver) count(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queries == nil {
		r.queries = map[string]int{}
	}
	r.queries[name]++
}

// Queries returns how many questions were asked of names in the domain
// suffix.
func (r *resolver) Queries(suffix string) int {
	suffix = normalise(suffix)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for name, c := range r.queries {
		if inDomain(name, suffix) {
			n += c
		}
	}
	return n
}

// inDomain reports whether name ends with suffix at a label boundary:
// "web.test" takes in "web.test" and "a.web.test" but not "notweb.test";
// ".web.test" takes in only the names under it; "" takes in every name.
func inDomain(name, suffix string) bool {
	if !strings.HasSuffix(name, suffix) {
		return false
	}
	rest := len(name) - len(suffix)
	return rest == 0 || suffix == "" || suffix[0] == '.' || name[rest-1] == '.'
}

// soa is the zone's start of authority, sent with negative answers so that
// resolvers cache them no longer than recordTTL.
func soa() dns.RR {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: Zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: recordTTL},
		Ns:      "ns." + Zone,
		Mbox:    "hostmaster." + Zone,
		Serial:  1,
		Refresh: 3600,
		Retry:   600,
		Expire:  86400,
		Minttl:  recordTTL,
	}
}

// normalise lower-cases a name's ASCII letters, as DNS servers, nginx and
// CDNs do (never the Kelvin sign into k), and drops its trailing dot.
func normalise(name string) string {
	return strings.TrimSuffix(lowerASCII(name), ".")
}

// lowerASCII maps A-Z to a-z and leaves every other rune alone.
func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}
