package server

// The server's lines of the audit log (package audit): a run's, a
// session's events, each named by its caller.

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner"
)

// entry is an audit line about a request of r (nil: the server's own),
// and rr, the run it asked for, if any.
func (s *Server) entry(r *http.Request, rr *RunRequest, code int, msg string) audit.Entry {
	e := audit.Entry{Event: requestEvent(r), Interface: audit.HTTP, Caller: caller(r), HTTPStatus: code, Error: msg}
	if rr != nil {
		e.Lang = rr.Lang
		e.Secrets = rr.Secrets
		e.Image = rr.Image
		if rr.Code != "" || len(rr.Command) > 0 {
			sum := sha256.Sum256([]byte(rr.Code + strings.Join(rr.Command, "\x00")))
			e.CodeSHA256 = hex.EncodeToString(sum[:])
		}
		e.Limits = map[string]string{}
		for k, v := range map[string]string{"timeout": rr.Timeout, "memory": rr.Memory, "tmp_size": rr.TmpSize, "output_limit": rr.OutputLimit, "runtime": rr.Runtime, "net_bytes": rr.NetBytes, "allow_hosts": strings.Join(rr.AllowHosts, ",")} {
			if v != "" {
				e.Limits[k] = v
			}
		}
		if rr.CPUs != nil {
			e.Limits["cpus"] = strconv.FormatFloat(*rr.CPUs, 'g', -1, 64)
		}
		if rr.Pids != nil {
			e.Limits["pids"] = strconv.FormatInt(*rr.Pids, 10)
		}
	}
	return e
}

// requestEvent is the event of a request's line when its handler names
// none: a run, a session's creation, or another request (refused before
// it reached a sandbox: its authentication, its body).
func requestEvent(r *http.Request) string {
	switch {
	case r.URL.Path == "/v1/runs":
		return audit.EventRun
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
		return audit.EventCreated
	}
	return audit.EventRequest
}

// caller names who asked: the remote address, and a short hash of the
// token when one was presented (never the token).
func caller(r *http.Request) string {
	return audit.Caller(r.RemoteAddr, r.Header.Get("Authorization"))
}

// sessionEntry is an audit line about session id.
func (s *Server) sessionEntry(r *http.Request, event, id string, code int, msg string) audit.Entry {
	e := s.entry(r, nil, code, msg)
	e.Event, e.Session = event, id
	return e
}

// sessionEnded is the audit line of a session that ended, why, and what
// its network carried (nil without one); r is nil when the server ended
// it on its own.
func (s *Server) sessionEnded(r *http.Request, id, reason string, network *egress.Report) audit.Entry {
	e := audit.Entry{Caller: audit.Server, Event: audit.EventEnded, Session: id, Reason: reason, Network: network}
	if r != nil {
		e.Caller, e.Interface = caller(r), audit.HTTP
	}
	return e
}

// injected is the audit log's view of the headers a run's proxy set.
func injected(hs []runner.InjectedHeader) []audit.Injected {
	var out []audit.Injected
	for _, h := range hs {
		out = append(out, audit.Injected{Host: h.Host, Header: h.Header})
	}
	return out
}
