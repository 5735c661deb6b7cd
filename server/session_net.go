package server

// A session's network over HTTP: what it did, and its allowlist.

import (
	"net/http"

	"github.com/boxer-dev/boxer/audit"
)

// AllowRequest is the body of PUT /v1/sessions/{id}/network/allow.
type AllowRequest struct {
	AllowHosts []string `json:"allow_hosts" jsonschema:"the session's new allowlist: HOST[:PORT] entries within the operator's; new names and connections are checked against it, those open stay"`
}

func (s *Server) handleSessionNetwork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := s.runner.SessionNetwork(r.Context(), id, owner(r))
	if err != nil {
		s.answerLifeError(w, r, audit.EventNetworkRead, id, err)
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
		s.answerLifeError(w, r, audit.EventNetwork, id, err)
		return
	}
	e := s.sessionEntry(r, audit.EventNetwork, id, http.StatusOK, "")
	e.AllowHosts = n.Allowed
	s.audit.Write(e)
	writeJSON(w, http.StatusOK, n)
}
