package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
)

// maxResolvedNames caps the names one run may resolve: the resolver
// remembers every answer it hands out for the run's life.
const maxResolvedNames = 4096

// run is the state of one sandbox's egress between Start and Close: its
// config, what the resolver handed out, the open connections and the
// report's counters. The resolver and the proxy share it.
type run struct {
	cfg Config
	// allow is the policy in force: cfg's, until SetPolicy changes it on
	// a live run.
	allow atomic.Pointer[Policy]
	dial  Dialer
	local func(netip.Addr) bool
	// inject holds the headers set on each intercepted host's requests.
	inject map[string][]Injection
	// ctx is cancelled by Close: it aborts upstream dials and lookups.
	ctx    context.Context
	cancel context.CancelFunc

	bytesIn     atomic.Int64
	bytesOut    atomic.Int64
	intercepted atomic.Int64

	mu          sync.Mutex
	connections int
	active      int
	quota       bool
	closed      bool
	denied      []Denial
	seen        map[Denial]bool
	deniedTotal int
	// names holds the addresses the resolver handed out for each name,
	// addrs the names each address was handed out for.
	names map[string]map[netip.Addr]bool
	addrs map[netip.Addr]map[string]bool
	// conns holds every open connection, either side, for Close and the
	// quota to close at once.
	conns map[io.Closer]bool
}

// newRun returns the state of a run enforcing cfg, with the defaults for
// what cfg leaves nil.
func newRun(cfg Config) *run {
	r := &run{
		cfg:   cfg,
		dial:  cfg.Dial,
		local: cfg.Local,
		seen:  map[Denial]bool{},
		names: map[string]map[netip.Addr]bool{},
		addrs: map[netip.Addr]map[string]bool{},
		conns: map[io.Closer]bool{},
	}
	if r.dial == nil {
		r.dial = (&net.Dialer{}).DialContext
	}
	if r.local == nil {
		r.local = isLocal
	}
	if len(cfg.Inject) > 0 {
		r.inject = map[string][]Injection{}
		for _, in := range cfg.Inject {
			in.Host, in.Header = normalName(in.Host), http.CanonicalHeaderKey(in.Header)
			r.inject[in.Host] = append(r.inject[in.Host], in)
		}
	}
	r.allow.Store(&cfg.Policy)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// policy is the allowlist in force now.
func (r *run) policy() Policy { return *r.allow.Load() }

// deny records a refused destination; the report keeps the first MaxDenied
// distinct ones and counts them all.
func (r *run) deny(dest, reason string) {
	r.denyStatus(dest, reason, 0)
}

// denyStatus records a refused destination the sandbox was answered
// status for.
func (r *run) denyStatus(dest, reason string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.denyLocked(dest, reason, status)
}

func (r *run) denyLocked(dest, reason string, status int) {
	r.deniedTotal++
	d := Denial{Destination: dest, Reason: reason, Status: status}
	if r.seen[d] || len(r.denied) >= MaxDenied {
		return
	}
	r.seen[d] = true
	r.denied = append(r.denied, d)
}

// open registers a connection the sandbox opened to dest. It returns a
// reason (and registers nothing) when the run refuses new connections:
// closed, over its quota or at its cap of concurrent connections, the last
// recorded as a denial.
func (r *run) open(c io.Closer, dest string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return "the sandbox's network is closing"
	case r.quota:
		return fmt.Sprintf("network quota of %d bytes exceeded", r.cfg.MaxBytes)
	case r.cfg.MaxConns > 0 && r.active >= r.cfg.MaxConns:
		reason := fmt.Sprintf("too many connections (max %d)", r.cfg.MaxConns)
		r.denyLocked(dest, reason, 0)
		return reason
	}
	r.active++
	r.conns[c] = true
	return ""
}

// done unregisters a connection open registered.
func (r *run) done(c io.Closer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
	delete(r.conns, c)
}

// track registers an upstream connection, so that the quota and Close
// close it; false when the run is closed or over its quota.
func (r *run) track(c io.Closer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.quota {
		return false
	}
	r.connections++
	r.conns[c] = true
	return true
}

// untrack unregisters a connection track registered.
func (r *run) untrack(c io.Closer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
}

// count adds bytes received from (in) and sent to (out) a destination,
// and closes every connection once the run is past its quota.
func (r *run) count(dest string, in, out int) {
	total := r.bytesIn.Add(int64(in)) + r.bytesOut.Add(int64(out))
	if r.cfg.MaxBytes <= 0 || total <= r.cfg.MaxBytes {
		return
	}
	r.mu.Lock()
	if !r.quota {
		r.quota = true
		r.denyLocked(dest, fmt.Sprintf("network quota of %d bytes exceeded", r.cfg.MaxBytes), 0)
	}
	r.mu.Unlock()
	r.closeAll()
}

// closeAll closes every open connection; their goroutines see the error
// and unregister them. New ones are refused already (closed or quota), so
// none escapes.
func (r *run) closeAll() {
	r.mu.Lock()
	conns := make([]io.Closer, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	// Outside the lock: closing a connection unregisters it.
	for _, c := range conns {
		c.Close()
	}
}

// shutdown refuses new connections, aborts lookups and closes every
// open connection.
func (r *run) shutdown() {
	r.cancel()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.closeAll()
}

// remember records the addresses the resolver hands out for name; false
// when the run already remembers too many names.
func (r *run) remember(name string, addrs []netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.names[name]
	if set == nil {
		if len(r.names) >= maxResolvedNames {
			return false
		}
		set = map[netip.Addr]bool{}
		r.names[name] = set
	}
	for _, a := range addrs {
		set[a] = true
		if r.addrs[a] == nil {
			r.addrs[a] = map[string]bool{}
		}
		r.addrs[a][name] = true
	}
	return true
}

// resolvedFor reports whether the resolver handed a out for name.
func (r *run) resolvedFor(name string, a netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.names[name][a]
}

// resolvedForPort reports whether the resolver handed a out for a name
// the policy allows on port.
func (r *run) resolvedForPort(a netip.Addr, port uint16) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.addrs[a] {
		if r.policy().NameAllowed(name, port) {
			return true
		}
	}
	return false
}

// report returns a snapshot of what the run's network did.
func (r *run) report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Report{
		Allowed:       r.policy().Strings(),
		Connections:   r.connections,
		BytesIn:       r.bytesIn.Load(),
		BytesOut:      r.bytesOut.Load(),
		Denied:        append([]Denial(nil), r.denied...),
		DeniedTotal:   r.deniedTotal,
		QuotaExceeded: r.quota,
		Intercepted:   int(r.intercepted.Load()),
	}
}

// injections returns the headers to set on requests to name, nil when
// its connections are not intercepted.
func (r *run) injections(name string) []Injection {
	return r.inject[name]
}
