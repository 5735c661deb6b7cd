package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/fleet"
	"github.com/boxer-dev/boxer/runner"
)

// In a fleet (Config.Fleet), a request for a session another member holds
// is forwarded to it once, over the fleet's mutual TLS, with the caller's
// own credentials; a session whose node left the fleet is 410. See
// docs/fleet.md.

// sessionInPath is the session ID of a path under /v1/sessions/ID.
func sessionInPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/v1/sessions/")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, "/")
	return id, id != ""
}

// fleetRoute sends each request to the member that should answer it.
func (s *Server) fleetRoute(next http.Handler) http.Handler {
	f := s.cfg.Fleet
	if f == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := sessionInPath(r.URL.Path); ok {
			s.toHolder(w, r, id, next)
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/v1/sessions" && f.Draining() {
			s.createElsewhere(w, r)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/v1/sessions" && !fleet.Forwarded(r) {
			s.listFleet(w, r, next)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// toHolder answers a request for session id here, or forwards it to the
// member holding it.
func (s *Server) toHolder(w http.ResponseWriter, r *http.Request, id string, next http.Handler) {
	place, err := s.cfg.Fleet.Locate(r.Context(), id)
	switch {
	case errors.Is(err, fleet.ErrForged):
		s.reject(w, r, http.StatusNotFound, &APIError{Field: "id", Message: runner.ErrSessionNotFound.Error()}, nil)
	case errors.Is(err, fleet.ErrGone):
		s.reject(w, r, http.StatusGone, &APIError{Field: "id", Message: "session " + id + ": " + err.Error()}, nil)
	case err != nil:
		w.Header().Set("Retry-After", "5")
		s.reject(w, r, http.StatusServiceUnavailable, &APIError{Field: "id", Message: "session " + id + ": " + err.Error()}, nil)
	case place.Local:
		next.ServeHTTP(w, r)
	case fleet.Forwarded(r):
		// Never a second hop: the member that sent it thought this one
		// held the session, and it does not.
		s.reject(w, r, http.StatusNotFound, &APIError{Field: "id", Message: runner.ErrSessionNotFound.Error()}, nil)
	default:
		s.forwarded(r, id, place.Peer, s.cfg.Fleet.Forward(w, r, place.Peer, fleet.PlaneAPI, s.peerFailed))
	}
}

// forwarded writes the line of a request sent to member p, which
// answered code (the member writes its own, naming the same caller).
func (s *Server) forwarded(r *http.Request, id string, p fleet.Peer, code int) {
	s.audit.Write(audit.Entry{Event: audit.EventForwarded, Interface: audit.HTTP, Caller: caller(r), Session: id, Member: p.Addr, HTTPStatus: code})
}

// peerFailed answers a request whose member could not be reached: 410 if
// its node left the fleet, else 503.
func (s *Server) peerFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, fleet.ErrGone) {
		writeJSON(w, http.StatusGone, &APIError{Field: "id", Message: err.Error()})
		return
	}
	w.Header().Set("Retry-After", "5")
	writeJSON(w, http.StatusServiceUnavailable, &APIError{Message: err.Error()})
}

// createElsewhere sends a new session from a draining member to one that
// takes them.
func (s *Server) createElsewhere(w http.ResponseWriter, r *http.Request) {
	peer, ok := s.cfg.Fleet.Elsewhere(r.Context())
	if !ok || fleet.Forwarded(r) {
		w.Header().Set("Retry-After", "5")
		s.reject(w, r, http.StatusServiceUnavailable, &APIError{Message: "this server is shutting down and takes no new sessions, and no other server of the fleet does: retry shortly"}, nil)
		return
	}
	s.forwarded(r, "", peer, s.cfg.Fleet.Forward(w, r, peer, fleet.PlaneAPI, s.peerFailed))
}

// listFleet answers GET /v1/sessions with the caller's sessions on every
// member: its own, and each peer's (asked with the caller's credentials,
// once). A peer that does not answer is left out, and the answer says so
// in the header Boxer-Fleet-Partial.
func (s *Server) listFleet(w http.ResponseWriter, r *http.Request, next http.Handler) {
	peers := s.cfg.Fleet.Others(r.Context())
	if len(peers) == 0 {
		next.ServeHTTP(w, r)
		return
	}
	local := &fleet.Capture{}
	next.ServeHTTP(local, r)
	if local.Code != http.StatusOK {
		local.CopyTo(w)
		return
	}
	var all sessionList
	if err := json.Unmarshal(local.Body, &all); err != nil {
		local.CopyTo(w)
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	partial := 0
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.cfg.Fleet.Ask(r, p, fleet.PlaneAPI)
			var l sessionList
			if err == nil {
				err = json.Unmarshal(got, &l)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				partial++
				return
			}
			all.Sessions = append(all.Sessions, l.Sessions...)
		}()
	}
	wg.Wait()
	slices.SortStableFunc(all.Sessions, func(a, b json.RawMessage) int { return createdAt(a).Compare(createdAt(b)) })
	if partial > 0 {
		w.Header().Set("Boxer-Fleet-Partial", "some servers of the fleet did not answer: their sessions are not listed")
	}
	writeJSON(w, http.StatusOK, all)
}

// sessionList is GET /v1/sessions' answer, its entries as they came.
type sessionList struct {
	Sessions []json.RawMessage `json:"sessions"`
}

func createdAt(raw json.RawMessage) time.Time {
	var s struct {
		CreatedAt time.Time `json:"created_at"`
	}
	_ = json.Unmarshal(raw, &s)
	return s.CreatedAt
}
