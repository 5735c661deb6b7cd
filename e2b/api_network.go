package e2b

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/boxer-dev/boxer/audit"
)

// A sandbox's network through E2B's options: an allowlist of boxer's.

// network is E2B's network configuration of a sandbox.
type network struct {
	AllowOut           []string        `json:"allowOut"`
	DenyOut            []string        `json:"denyOut"`
	AllowPublicTraffic *bool           `json:"allowPublicTraffic"`
	MaskRequestHost    json.RawMessage `json:"maskRequestHost"`
	HTTPSPorts         json.RawMessage `json:"httpsPorts"`
	Rules              json.RawMessage `json:"rules"`
	EgressProxy        json.RawMessage `json:"egressProxy"`
}

// Default networks: what a sandbox gets from an SDK's
// allow_internet_access: true (every SDK up to 2.50 sends it on every
// create) when it names no hosts of its own.
const (
	// DefaultNetworkNone gives it no network: boxer's default, and E2B's
	// "internet" never means more than the operator chose.
	DefaultNetworkNone = "none"
	// DefaultNetworkAllowlist gives it the operator's whole allowlist.
	DefaultNetworkAllowlist = "allowlist"
)

// allowHosts turns E2B's network options into boxer's allowlist: internet
// off unless asked (as boxer is, unlike E2B); "internet on" is the
// operator's default network (Config.DefaultNetwork: none, or its whole
// list), never an error; allowOut narrows the operator's list.
func (s *Server) allowHosts(allowInternet *bool, n *network) ([]string, error) {
	var out []string
	if allowInternet != nil && *allowInternet && s.cfg.DefaultNetwork == DefaultNetworkAllowlist {
		out = slices.Clone(s.cfg.Max.AllowHosts)
	}
	if n == nil {
		return out, nil
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"network.maskRequestHost", n.MaskRequestHost}, {"network.httpsPorts", n.HTTPSPorts}, {"network.rules", n.Rules}, {"network.egressProxy", n.EgressProxy}} {
		if len(f.raw) > 0 && string(f.raw) != "null" {
			return nil, unsupported(f.name, "boxer's egress is an allowlist of hosts (network.allowOut)")
		}
	}
	for _, d := range n.DenyOut {
		if d != "0.0.0.0/0" {
			return nil, unsupported("network.denyOut", "boxer denies everything network.allowOut does not allow; only 0.0.0.0/0 may be given")
		}
	}
	if len(n.AllowOut) > 0 {
		out = nil
		for _, h := range n.AllowOut {
			if h == "0.0.0.0/0" {
				out = append(out, s.cfg.Max.AllowHosts...)
				continue
			}
			out = append(out, h)
		}
		if len(out) == 0 {
			return nil, &badField{"network.allowOut", "this server gives sandboxes no network (its operator set no --allow-host)"}
		}
	}
	return out, nil
}

// handleNetwork replaces a live sandbox's allowlist (updateNetwork),
// within the operator's list: no list (allowInternetAccess false, an
// empty object) cuts its network, as a sandbox made without one has none.
func (s *Server) handleNetwork(w http.ResponseWriter, r *http.Request) {
	id, caller := r.PathValue("id"), callerOf(r)
	var body struct {
		network
		AllowInternetAccess *bool `json:"allow_internet_access"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	sb, _, err := s.find(r.Context(), caller, id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	hosts, err := s.allowHosts(body.AllowInternetAccess, &body.network)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	if !sb.Linked {
		if len(hosts) == 0 {
			// No network asked of one that has none: nothing to change.
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeError(w, http.StatusBadRequest, "network: sandbox "+id+" was made without network; boxer cannot give it one later (make it with network.allowOut)")
		return
	}
	if _, err := s.runner.SetSessionAllow(r.Context(), id, caller, hosts, s.cfg.Max); err != nil {
		s.refuse(w, r, audit.EventNetwork, id, err)
		return
	}
	s.mu.Lock()
	sb.AllowHosts = hosts
	s.mu.Unlock()
	s.persist(sb)
	e := entry(r, audit.EventNetwork, id, http.StatusNoContent)
	e.AllowHosts = hosts
	s.cfg.Audit.Write(e)
	w.WriteHeader(http.StatusNoContent)
}

// publicTraffic is whether a sandbox made with n has public ports: as n
// says, else the operator's default (Config.PublicPorts).
func (s *Server) publicTraffic(n *network) bool {
	if n == nil || n.AllowPublicTraffic == nil {
		return s.cfg.PublicPorts
	}
	return *n.AllowPublicTraffic
}
