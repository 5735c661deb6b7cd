package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
)

// A session's ports over HTTP (docs/http.md, "Ports"): any request to
// /v1/sessions/{id}/ports/{port}/{path...} is proxied to /{path...} on
// that port of the session's loopback, as a program inside it would
// connect (runner.DialPort), streaming and upgrades (websockets) included.
// Only the session's owner reaches it; the caller's token goes no
// further than boxer.

// portPaths are the proxy's routes, for any method.
var portPaths = []string{"/v1/sessions/{id}/ports/{port}", "/v1/sessions/{id}/ports/{port}/{path...}"}

func (s *Server) handleSessionPort(w http.ResponseWriter, r *http.Request) {
	id, who := r.PathValue("id"), owner(r)
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		s.reject(w, r, http.StatusBadRequest, &APIError{Field: runner.FieldPort, Message: "must be a TCP port from 1 to 65535, not " + strconv.Quote(r.PathValue("port"))}, nil)
		return
	}
	if err := s.runner.CheckSession(r.Context(), id, who); err != nil {
		s.answerSessionError(w, r, id, err)
		return
	}
	// A stream or an upgraded connection may outlive the server's
	// deadlines for a request.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "127.0.0.1:"+strconv.Itoa(port)
			pr.Out.URL.Path, pr.Out.URL.RawPath = "/"+pr.In.PathValue("path"), ""
			pr.Out.Host = pr.Out.URL.Host
			pr.Out.Header.Del("Authorization")
		},
		// A connection of its own for each request: one to another
		// session's port must never be taken from a pool.
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return s.runner.DialPort(ctx, id, who, port)
			},
			DisableKeepAlives:  true,
			DisableCompression: true,
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.answerPortError(w, r, id, port, err)
		},
	}
	proxy.ServeHTTP(w, r)
}

// answerPortError answers a request the session's port did not: 502 when
// nothing there answered, as a session's error otherwise.
func (s *Server) answerPortError(w http.ResponseWriter, r *http.Request, id string, port int, err error) {
	var pe *runner.PortError
	switch {
	case errors.As(err, &pe):
	case errors.Is(err, runner.ErrSessionNotFound), errors.Is(err, runner.ErrInvalid), errors.Is(err, runner.ErrSessionPaused):
		s.answerSessionError(w, r, id, err)
		return
	case r.Context().Err() != nil:
		return
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// runsc hands the connection over before gVisor has connected:
		// a refused one is closed at once.
		pe = &runner.PortError{ID: id, Port: port, Reason: "the connection was closed before an answer"}
	default:
		pe = &runner.PortError{ID: id, Port: port, Reason: err.Error()}
	}
	s.metrics.rejected.WithLabelValues("502").Inc()
	s.audit.Write(s.sessionEntry(r, audit.EventPort, id, http.StatusBadGateway, pe.Error()))
	writeJSON(w, http.StatusBadGateway, &APIError{Field: runner.FieldPort, Message: pe.Error()})
}
