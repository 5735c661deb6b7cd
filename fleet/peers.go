package fleet

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProbePath is where a member says which node it serves. It is open (no
// bearer token): it tells nothing but an opaque tag, and its answer is
// signed over the asker's nonce with the fleet key, so that a member sends
// its callers' requests only to a server that holds the key.
const ProbePath = "/v1/fleet/node"

// Peer is a member of the fleet as another sees it.
type Peer struct {
	// Addr is its API's host:port; E2B its E2B API's, or "".
	Addr string
	E2B  string
	// Tag is its node's, as IDs carry it.
	Tag      string
	Draining bool
	Self     bool
}

// probeAnswer is ProbePath's body.
type probeAnswer struct {
	Node     string `json:"node"`
	Draining bool   `json:"draining"`
	E2BPort  int    `json:"e2b_port,omitempty"`
	Proof    string `json:"proof"`
}

func (f *Fleet) proof(nonce string, a probeAnswer) string {
	return hex.EncodeToString(f.mac("probe", nonce, a.Node, strconv.FormatBool(a.Draining), strconv.Itoa(a.E2BPort)))
}

// ServeProbe answers ProbePath.
func (f *Fleet) ServeProbe(w http.ResponseWriter, r *http.Request) {
	nonce := r.URL.Query().Get("nonce")
	if len(nonce) != 32 {
		http.Error(w, "nonce must be 32 hex digits", http.StatusBadRequest)
		return
	}
	a := probeAnswer{Node: f.tag, Draining: f.draining.Load(), E2BPort: f.cfg.E2BPort}
	a.Proof = f.proof(nonce, a)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
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

// probe asks the member at addr which node it serves.
func (f *Fleet) probe(ctx context.Context, addr string) (Peer, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+ProbePath+"?nonce="+nonce, nil)
	if err != nil {
		return Peer{}, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return Peer{}, err
	}
	defer resp.Body.Close()
	var a probeAnswer
	if resp.StatusCode != http.StatusOK {
		return Peer{}, fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return Peer{}, fmt.Errorf("%s: %v", addr, err)
	}
	if !hmac.Equal([]byte(a.Proof), []byte(f.proof(nonce, a))) {
		return Peer{}, fmt.Errorf("%s does not hold the fleet key", addr)
	}
	p := Peer{Addr: addr, Tag: a.Node, Draining: a.Draining, Self: a.Node == f.tag}
	if a.E2BPort > 0 {
		host, _, _ := net.SplitHostPort(addr)
		p.E2B = net.JoinHostPort(host, strconv.Itoa(a.E2BPort))
	}
	return p, nil
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
	for i := range peers {
		if errs[i] != nil {
			f.failed++
			continue
		}
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

// baseURL is http://addr.
func baseURL(addr string) *url.URL { return &url.URL{Scheme: "http", Host: addr} }
