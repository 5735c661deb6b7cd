package e2b

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/runner"
)

// The headers E2B's SDKs route and authenticate data-plane requests with.
const (
	headerSandboxID    = "E2b-Sandbox-Id"
	headerSandboxPort  = "E2b-Sandbox-Port"
	headerAccessToken  = "X-Access-Token"
	headerTrafficToken = "E2b-Traffic-Access-Token"
)

// sandboxNotFound is what E2B's proxy says, to the letter, of a request
// to a sandbox that never existed, was killed or timed out: its SDKs' and
// tests' callers compare it.
const sandboxNotFound = "The sandbox was not found"

// Handler answers the control plane and every sandbox's data plane.
func (s *Server) Handler() http.Handler {
	control := s.controlPlane()
	envd := s.envdHandler()
	interpreter := s.interp.Handler()
	return s.fleetRoute(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, port, ok, err := target(r, s.cfg.Domain)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if !ok {
			if strings.HasPrefix(r.URL.Path, uploadPrefix) {
				// Its token, in the URL, is its authentication.
				s.handleUpload(w, r)
				return
			}
			control.ServeHTTP(w, r)
			return
		}
		sb, found := s.lookup(id)
		if !found {
			// As E2B's own proxy answers: the SDKs read a 502 as a
			// sandbox that is not running (any more).
			writeJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": quote.Cut(id), "message": sandboxNotFound, "code": http.StatusBadGateway})
			return
		}
		if port == EnvdPort && signedFiles(r) {
			// A signed file URL: the signature is its authentication.
			if err := sb.checkSignature(r, time.Now()); err != nil {
				writeError(w, http.StatusUnauthorized, err.Error())
				return
			}
		} else if !sb.allowed(r, port) {
			// As E2B: envd refuses a request without its token (401),
			// E2B's proxy any other port's (403).
			code := http.StatusForbidden
			if port == EnvdPort {
				code = http.StatusUnauthorized
			}
			writeError(w, code, fmt.Sprintf("sandbox %s on port %d needs its access token (%s, from the sandbox's creation)", id, port, headerAccessToken))
			return
		}
		if !s.wake(r, sb) {
			writeJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": quote.Cut(id), "message": "The sandbox is paused and could not be resumed: connect to it", "code": http.StatusBadGateway})
			return
		}
		// The routing headers and tokens go no further than boxer.
		for _, h := range []string{headerSandboxID, headerSandboxPort, headerAccessToken, headerTrafficToken} {
			r.Header.Del(h)
		}
		r = r.WithContext(withSandbox(r.Context(), sb))
		switch port {
		case EnvdPort:
			envd.ServeHTTP(w, r)
		case InterpreterPort:
			interpreter.ServeHTTP(w, r)
		default:
			s.proxyPort(w, r, sb, port)
		}
	}))
}

// target reads the sandbox and port a data-plane request names, by headers
// or by a host name <port>-<sandboxID>.<domain>; ok is false for the
// control plane.
func target(r *http.Request, domain string) (id string, port int, ok bool, err error) {
	if id = r.Header.Get(headerSandboxID); id != "" {
		p := r.Header.Get(headerSandboxPort)
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return "", 0, false, fmt.Errorf("%s must be a TCP port from 1 to 65535, not %q", headerSandboxPort, p)
		}
		return id, port, true, nil
	}
	if domain == "" {
		return "", 0, false, nil
	}
	label, ok := strings.CutSuffix(strings.ToLower(hostOnly(r.Host)), "."+strings.ToLower(hostOnly(domain)))
	// api.<domain> is the control plane (the SDKs' default E2B_API_URL
	// with a domain).
	if !ok || strings.Contains(label, ".") || label == "api" {
		return "", 0, false, nil
	}
	p, id, ok := strings.Cut(label, "-")
	if !ok || id == "" {
		return "", 0, false, fmt.Errorf("host %q: a sandbox's host name is <port>-<sandboxID>.%s", r.Host, domain)
	}
	if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
		return "", 0, false, fmt.Errorf("host %q: %q is not a TCP port from 1 to 65535", r.Host, p)
	}
	return id, port, true, nil
}

// hostOnly is a host name without its port.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// allowed checks a data-plane request's token: envd always wants the
// sandbox's access token; other ports take either token, or none on a
// sandbox made with public traffic allowed.
func (sb *sandbox) allowed(r *http.Request, port int) bool {
	envd := equal(r.Header.Get(headerAccessToken), sb.EnvdToken)
	if port == EnvdPort {
		return envd
	}
	return envd || equal(r.Header.Get(headerTrafficToken), sb.TrafficToken) || (sb.Public && port != InterpreterPort)
}

func equal(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// proxyPort proxies a request to a port inside the sandbox, as a program
// in it would connect (runner.DialPort): streaming and upgrades included.
func (s *Server) proxyPort(w http.ResponseWriter, r *http.Request, sb *sandbox, port int) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "127.0.0.1:"+strconv.Itoa(port)
			pr.Out.Host = pr.Out.URL.Host
			for _, h := range credentialHeaders {
				pr.Out.Header.Del(h)
			}
		},
		// A connection of its own for each request: one to another
		// sandbox's port must never be taken from a pool.
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return s.runner.DialPort(ctx, sb.ID, sb.Caller, port)
			},
			DisableKeepAlives:  true,
			DisableCompression: true,
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			var pe *runner.PortError
			msg := err.Error()
			if errors.As(err, &pe) {
				msg = pe.Error()
			}
			writeJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": sb.ID, "port": port, "message": msg, "code": http.StatusBadGateway})
		},
	}
	proxy.ServeHTTP(w, r)
}

// apiError is E2B's error body.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeError answers an error; what msg quotes of the request (a path, a
// name) comes back as a prefix.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{Code: code, Message: quote.Message(msg)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
