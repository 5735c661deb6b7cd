package fakenet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
)

// hello answers with the Host the client asked for and the address that
// took the connection, so a test can tell which server it reached.
func hello(w http.ResponseWriter, r *http.Request) {
	local := "?"
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a.String()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "hello from %s on %s\n", r.Host, local)
}

// sharedHandler serves the shared host's sites, cdn.test and evil.test,
// as a CDN or a shared web server does: over TLS the server name (SNI)
// picks the site and a Host that names another is answered 421; without
// SNI, or over plain HTTP, the Host picks it; naming neither or an
// unknown one gets the default site, evil.test. It counts each site's
// answers in served.
func sharedHandler(served *siteLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := lowerASCII(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		site := EvilName
		switch {
		case r.TLS != nil && r.TLS.ServerName != "":
			site = lowerASCII(r.TLS.ServerName)
			if host != site {
				http.Error(w, "misdirected: this connection is for "+site, http.StatusMisdirectedRequest)
				return
			}
		case host == CDNName:
			site = CDNName
		}
		local := "?"
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			local = a.String()
		}
		served.add(site)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "site %s on %s\n", site, local)
	})
}

// siteLog counts the answers of the shared host's sites.
type siteLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *siteLog) add(site string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[site]++
}

func (l *siteLog) get(site string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[site]
}

// hiddenHeaders are the request headers /headers does not echo: a program
// that boxer gives a credential to must not read it back.
var hiddenHeaders = []string{"Authorization", "X-Api-Key"}

// webHandler serves web.test's HTTPS: /headers answers the request's
// headers (but the hidden ones) and its Host as a JSON object, any other
// path hello. It records every request's headers in log.
func webHandler(log *headerLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.URL.Path, r.Header)
		if r.URL.Path != "/headers" {
			hello(w, r)
			return
		}
		echo := map[string]any{"_host": r.Host}
		for name, values := range r.Header {
			if !slices.Contains(hiddenHeaders, http.CanonicalHeaderKey(name)) {
				echo[name] = values
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(echo)
	})
}

// headerLog holds the headers of the requests received, by path, in the
// order they came.
type headerLog struct {
	mu     sync.Mutex
	byPath map[string][]http.Header
}

func (l *headerLog) add(path string, h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byPath == nil {
		l.byPath = map[string][]http.Header{}
	}
	l.byPath[path] = append(l.byPath[path], h.Clone())
}

func (l *headerLog) get(path string) []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []http.Header
	for _, h := range l.byPath[path] {
		out = append(out, h.Clone())
	}
	return out
}

// hits counts accepted TCP connections by local address.
type hits struct {
	mu sync.Mutex
	n  map[netip.AddrPort]int
}

func (h *hits) add(a net.Addr) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return
	}
	ap := tcp.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[netip.AddrPort]int{}
	}
	h.n[ap]++
}

func (h *hits) get(ap netip.AddrPort) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[ap]
}

// countingListener counts each connection it accepts.
type countingListener struct {
	net.Listener
	hits *hits
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.hits.add(c.LocalAddr())
	}
	return c, err
}

// echoServer writes back every byte it reads, on any number of listeners.
type echoServer struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	lns   []net.Listener
	conns map[net.Conn]struct{}
	done  bool
}

func (s *echoServer) serve(l net.Listener) {
	s.mu.Lock()
	s.lns = append(s.lns, l)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !s.track(c) {
				c.Close()
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer s.untrack(c)
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

func (s *echoServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *echoServer) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// close stops the listeners, cuts every connection and waits for the
// server's goroutines to end.
func (s *echoServer) close() error {
	s.mu.Lock()
	s.done = true
	var errs []error
	for _, l := range s.lns {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(errs...)
}
