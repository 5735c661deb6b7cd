package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"time"
)

// HeaderForwarded marks a request one member forwarded to another. A
// request that carries it is answered where it lands, never forwarded
// again: no loops. A caller who sets it only keeps its request from being
// forwarded.
const HeaderForwarded = "Boxer-Fleet-Forwarded"

// Forwarded reports whether r came from another member.
func Forwarded(r *http.Request) bool { return r.Header.Get(HeaderForwarded) != "" }

// transport carries forwarded requests between members over the pod
// network, connections kept for the next.
var transport = &http.Transport{
	Proxy:               nil,
	MaxIdleConnsPerHost: 16,
	IdleConnTimeout:     90 * time.Second,
	DisableCompression:  true,
}

// Forward sends r to the member p at addr (its Addr or E2B) as it came:
// its method, path, host name, body and headers (the caller's credentials
// included: the member checks them as its own), and streams the answer
// back, upgrades (a port's WebSocket) included. fail answers when the
// member cannot be reached: with ErrGone if DNS, asked again, no longer
// lists its node and every member listed answers, else ErrUnreachable.
func (f *Fleet) Forward(w http.ResponseWriter, r *http.Request, p Peer, addr string, fail func(http.ResponseWriter, error)) {
	// A stream or a large file may take longer than the server's own
	// read and write deadlines: the member at the other end has its own.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	target := baseURL(addr)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(HeaderForwarded, f.cfg.Node)
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			fail(w, f.recheck(r.Context(), p.Tag))
		},
	}
	proxy.ServeHTTP(w, r)
}

// Others are the members other than this one.
func (f *Fleet) Others(ctx context.Context) []Peer {
	peers, _ := f.list(ctx, false)
	var out []Peer
	for _, p := range peers {
		if !p.Self {
			out = append(out, p)
		}
	}
	return out
}

// Ask sends r's method and path (no body) to the member at addr with r's
// credentials, marked as forwarded, and returns the body of a 200 answer
// (at most 16 MiB).
func (f *Fleet) Ask(r *http.Request, addr string) ([]byte, error) {
	u := *r.URL
	u.Scheme, u.Host = "http", addr
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Host = r.Host
	req.Header.Set(HeaderForwarded, f.cfg.Node)
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// recheck says why the member of node tag did not answer: gone from the
// fleet, or unreachable.
func (f *Fleet) recheck(ctx context.Context, tag string) error {
	peers, failed := f.list(ctx, true)
	for _, p := range peers {
		if p.Tag == tag {
			return ErrUnreachable
		}
	}
	if failed > 0 {
		return ErrUnreachable
	}
	return ErrGone
}
