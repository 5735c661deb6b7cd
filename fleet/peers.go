package fleet

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProbePath is where a member says which node it serves, on the fleet
// listener only: the asker is a member (its certificate), and the answer
// comes from one (the listener's), over the connection TLS authenticated.
const ProbePath = "/v1/fleet/node"

// Peer is a member of the fleet as another sees it.
type Peer struct {
	// Addr is its fleet listener's host:port.
	Addr string
	// E2B says it answers E2B's API.
	E2B bool
	// Tag is its node's, as IDs carry it.
	Tag      string
	Draining bool
	Self     bool
}

// probeAnswer is ProbePath's body.
type probeAnswer struct {
	Node     string `json:"node"`
	Draining bool   `json:"draining"`
	E2B      bool   `json:"e2b,omitempty"`
}

// serveProbe answers ProbePath.
func (f *Fleet) serveProbe(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(probeAnswer{Node: f.tag, Draining: f.draining.Load(), E2B: f.cfg.E2B})
}

// SetDraining marks this member as draining: peers send it no new
// sessions, and Draining says so.
func (f *Fleet) SetDraining() { f.draining.Store(true) }

// Draining reports whether this member is draining.
func (f *Fleet) Draining() bool { return f.draining.Load() }

// resolver is the system's, or one asking cfg.DNS.
func (f *Fleet) resolver() *net.Resolver {
	if f.cfg.DNS == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, f.cfg.DNS)
	}}
}

// addrs looks the peers up in DNS: host:port of each.
func (f *Fleet) addrs(ctx context.Context) ([]string, error) {
	res := f.resolver()
	type target struct {
		host string
		port int
	}
	var targets []target
	if strings.HasPrefix(f.cfg.Peers, "_") {
		_, srvs, err := res.LookupSRV(ctx, "", "", f.cfg.Peers)
		if err != nil {
			return nil, err
		}
		for _, s := range srvs {
			targets = append(targets, target{s.Target, int(s.Port)})
		}
	} else {
		targets = append(targets, target{f.cfg.Peers, f.cfg.Port})
	}
	var out []string
	for _, t := range targets {
		hosts, err := res.LookupHost(ctx, t.host)
		if err != nil {
			return nil, err
		}
		for _, h := range hosts {
			out = append(out, net.JoinHostPort(h, strconv.Itoa(t.port)))
		}
	}
	return out, nil
}

// probe asks the member at addr which node it serves, over a connection
// on which both ends proved they hold the fleet key.
func (f *Fleet) probe(ctx context.Context, addr string) (Peer, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+ProbePath, nil)
	if err != nil {
		return Peer{}, err
	}
	resp, err := f.transport.RoundTrip(req)
	if err != nil {
		return Peer{}, fmt.Errorf("probing %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var a probeAnswer
	if resp.StatusCode != http.StatusOK {
		return Peer{}, fmt.Errorf("probing %s: answered %s", addr, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&a); err != nil {
		return Peer{}, fmt.Errorf("probing %s: %w", addr, err)
	}
	return Peer{Addr: addr, Tag: a.Node, Draining: a.Draining, E2B: a.E2B, Self: a.Node == f.tag}, nil
}

// list returns the peers, asking DNS and each peer again when the list is
// older than Refresh, or when force is set and it is older than a second.
func (f *Fleet) list(ctx context.Context, force bool) ([]Peer, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	age := time.Since(f.looked)
	if age < f.cfg.Refresh && (!force || age < time.Second) {
		return f.peers, f.failed
	}
	addrs, err := f.addrs(ctx)
	if err != nil {
		// DNS did not answer: keep what was known, and count the
		// unknown as unreachable rather than gone.
		f.looked, f.failed = time.Now(), max(f.failed, 1)
		return f.peers, f.failed
	}
	peers := make([]Peer, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			peers[i], errs[i] = f.probe(ctx, a)
		}()
	}
	wg.Wait()
	f.peers, f.failed = f.peers[:0:0], 0
	seen := map[string]bool{}
	for i := range peers {
		if errs[i] != nil {
			f.failed++
			continue
		}
		// One entry per node, the first DNS lists: a node reached by two
		// addresses (a pod and its predecessor, a router) is asked once.
		if seen[peers[i].Tag] {
			continue
		}
		seen[peers[i].Tag] = true
		f.peers = append(f.peers, peers[i])
	}
	f.looked = time.Now()
	return f.peers, f.failed
}

// Locate says where the session id is held: here, at a peer, or nowhere
// (ErrForged, ErrGone, ErrUnreachable).
func (f *Fleet) Locate(ctx context.Context, id string) (Place, error) {
	tag, ok := f.parse(id)
	if !ok {
		return Place{}, ErrForged
	}
	if tag == f.tag {
		return Place{Local: true}, nil
	}
	for _, force := range []bool{false, true} {
		peers, failed := f.list(ctx, force)
		for _, p := range peers {
			if p.Tag == tag {
				return Place{Peer: p}, nil
			}
		}
		if force && failed > 0 {
			return Place{}, ErrUnreachable
		}
	}
	return Place{}, ErrGone
}

// Elsewhere picks a peer that takes new sessions (not this member, not
// draining), at random; ok is false when there is none.
func (f *Fleet) Elsewhere(ctx context.Context) (Peer, bool) {
	for _, force := range []bool{false, true} {
		peers, _ := f.list(ctx, force)
		var open []Peer
		for _, p := range peers {
			if !p.Self && !p.Draining {
				open = append(open, p)
			}
		}
		if len(open) > 0 {
			n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(open))))
			return open[n.Int64()], true
		}
	}
	return Peer{}, false
}

// baseURL is https://addr, a member's fleet listener.
func baseURL(addr string) *url.URL { return &url.URL{Scheme: "https", Host: addr} }
