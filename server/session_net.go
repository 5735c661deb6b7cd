package server

// A session's network over HTTP: what it did, and its allowlist.

import (
	"net/http"
)

// AllowRequest is the body of PUT /v1/sessions/{id}/network/allow.
type AllowRequest struct {
	AllowHosts []string `json:"allow_hosts" jsonschema:"the session's new allowlist: HOST[:PORT] entries within the operator's; new names and connections are checked against it, those open stay"`
}

func (s *Server) handleSessionNetwork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := s.runner.SessionNetwork(r.Context(), id, owner(r))
	if err != nil {
		s.answerLifeError(w, r, "session_network", id, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

func (s *Server) handleSessionAllow(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body AllowRequest
	if !s.decodeBody(w, r, &body) {
		return
	}
	n, err := s.runner.SetSessionAllow(r.Context(), id, owner(r), body.AllowHosts, s.cfg.Max)
	if err != nil {
		s.answerLifeError(w, r, "session_allow", id, err)
		return
	}
	s.audit.write(s.sessionEntry(r, "session_allow", id, http.StatusOK, ""))
	writeJSON(w, http.StatusOK, n)
}
