package e2b

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/fleet"
)

// In a fleet (Config.Fleet) a sandbox's ID names the node holding it, as a
// session's does; a request for another member's sandbox, on any plane, is
// forwarded once to that member's E2B handler over the fleet's mutual TLS,
// host name and tokens unchanged. See docs/fleet.md.

// controlTarget is the sandbox ID a control-plane path names.
func controlTarget(p string) (string, bool) {
	for _, prefix := range []string{"/sandboxes/", "/v2/sandboxes/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			id, _, _ := strings.Cut(rest, "/")
			return id, id != ""
		}
	}
	return "", false
}

// fleetRoute answers here what is held here, and forwards the rest.
func (s *Server) fleetRoute(next http.Handler) http.Handler {
	f := s.cfg.Fleet
	if f == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _, data, err := target(r, s.cfg.Domain)
		if err != nil {
			next.ServeHTTP(w, r) // its 400
			return
		}
		if !data {
			id, data = controlTarget(r.URL.Path)
		}
		switch {
		case data:
			s.toHolder(w, r, id, next)
		case f.Draining() && r.Method == http.MethodPost && (r.URL.Path == "/v2/sandboxes" || r.URL.Path == "/sandboxes"):
			peer, ok := f.Elsewhere(r.Context())
			if !ok || !peer.E2B || fleet.Forwarded(r) {
				w.Header().Set("Retry-After", "5")
				writeError(w, http.StatusServiceUnavailable, "this server is shutting down and takes no new sandboxes, and no other server of the fleet does: retry shortly")
				return
			}
			s.forwarded(r, "", peer, f.Forward(w, r, peer, fleet.PlaneE2B, peerFailed))
		case r.Method == http.MethodGet && (r.URL.Path == "/v2/sandboxes" || r.URL.Path == "/sandboxes") && !fleet.Forwarded(r):
			s.listFleet(w, r, next)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (s *Server) toHolder(w http.ResponseWriter, r *http.Request, id string, next http.Handler) {
	place, err := s.cfg.Fleet.Locate(r.Context(), id)
	switch {
	case errors.Is(err, fleet.ErrForged), err == nil && !place.Local && fleet.Forwarded(r):
		// What a sandbox that never existed gets (see Handler), and never
		// a second hop.
		writeJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": id, "message": sandboxNotFound, "code": http.StatusBadGateway})
	case errors.Is(err, fleet.ErrGone):
		writeJSON(w, http.StatusGone, map[string]any{"sandboxId": id, "message": "sandbox " + id + ": " + err.Error(), "code": http.StatusGone})
	case err != nil:
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "sandbox "+id+": "+err.Error())
	case place.Local:
		next.ServeHTTP(w, r)
	case !place.Peer.E2B:
		writeError(w, http.StatusServiceUnavailable, "sandbox "+id+": the server holding it has no E2B listener (--e2b-listen)")
	default:
		s.forwarded(r, id, place.Peer, s.cfg.Fleet.Forward(w, r, place.Peer, fleet.PlaneE2B, peerFailed))
	}
}

// forwarded writes the line of a request for sandbox id sent to member
// p, which answered code; the caller is named by its address and its API
// key where it sent one (a data-plane request names its address only).
func (s *Server) forwarded(r *http.Request, id string, p fleet.Peer, code int) {
	auth := ""
	if key := r.Header.Get("X-Api-Key"); key != "" {
		auth = "Bearer " + key
	}
	s.cfg.Audit.Write(audit.Entry{Event: audit.EventForwarded, Interface: audit.E2B, Caller: audit.Caller(r.RemoteAddr, auth), Session: id, Member: p.Addr, HTTPStatus: code})
}

func peerFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, fleet.ErrGone) {
		writeError(w, http.StatusGone, err.Error())
		return
	}
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, err.Error())
}

// listFleet answers GET /v2/sandboxes with the caller's sandboxes on every
// member (see the server package's listFleet).
func (s *Server) listFleet(w http.ResponseWriter, r *http.Request, next http.Handler) {
	var peers []fleet.Peer
	for _, p := range s.cfg.Fleet.Others(r.Context()) {
		if p.E2B {
			peers = append(peers, p)
		}
	}
	if len(peers) == 0 {
		next.ServeHTTP(w, r)
		return
	}
	local := &fleet.Capture{}
	next.ServeHTTP(local, r)
	var all []json.RawMessage
	if local.Code != http.StatusOK || json.Unmarshal(local.Body, &all) != nil {
		local.CopyTo(w)
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.cfg.Fleet.Ask(r, p, fleet.PlaneE2B)
			var l []json.RawMessage
			if err == nil && json.Unmarshal(got, &l) == nil {
				mu.Lock()
				all = append(all, l...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if all == nil {
		all = []json.RawMessage{}
	}
	writeJSON(w, http.StatusOK, all)
}
