package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"time"
)

// Plane is the handler a forwarded request is for on the member's fleet
// listener: boxer's API or E2B's.
type Plane string

// The planes.
const (
	PlaneAPI Plane = "api"
	PlaneE2B Plane = "e2b"
)

// The headers a member sets on a request it forwards. They mean something
// only on the fleet listener, which only members reach; each is set anew
// on every hop, whatever the caller sent.
const (
	// headerPlane names the request's plane.
	headerPlane = "Boxer-Fleet-Plane"
	// headerClient is the address of the caller the first member served,
	// for the holding member's audit log.
	headerClient = "Boxer-Fleet-Client"
)

// Forward sends r to the member p's fleet listener, for its plane, as it
// came: its method, path, host name, body and headers (the caller's
// credentials included: the member checks them as its own), over mutual
// TLS with the fleet's key (so only a member can read them), and streams
// the answer back, upgrades (a port's WebSocket) included. fail answers
// when the member cannot be reached: with ErrGone if DNS, asked again, no
// longer lists its node and every member listed answers, else
// ErrUnreachable. It returns the status the caller was answered, for the
// forwarding member's audit log.
func (f *Fleet) Forward(w http.ResponseWriter, r *http.Request, p Peer, plane Plane, fail func(http.ResponseWriter, error)) int {
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	// A stream or a large file may take longer than the server's own
	// read and write deadlines: the member at the other end has its own.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	target := baseURL(p.Addr)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(headerPlane, string(plane))
			pr.Out.Header.Set(headerClient, pr.In.RemoteAddr)
		},
		Transport:     f.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			fail(w, f.recheck(r.Context(), p.Tag))
		},
	}
	proxy.ServeHTTP(w, r)
	return sw.status
}

// statusWriter keeps the status a ResponseWriter was given; Unwrap lets
// http.ResponseController reach the flushes, deadlines and upgrades of
// the one it wraps.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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

// Ask sends r's method and path (no body) to member p's fleet listener,
// for its plane, with r's credentials, and returns the body of a 200
// answer (at most 16 MiB).
func (f *Fleet) Ask(r *http.Request, p Peer, plane Plane) ([]byte, error) {
	u := *baseURL(p.Addr)
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
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
	req.Header.Set(headerPlane, string(plane))
	req.Header.Set(headerClient, r.RemoteAddr)
	resp, err := f.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", p.Addr, resp.Status)
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
