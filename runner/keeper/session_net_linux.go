package keeper

// A session's network: its link, made as a run's, its gateway in its keeper.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/containerd/log"
)

// A session with allow_hosts gets its link when it is made, exactly as a
// run does (namespace, interfaces, table, lease naming its run
// directory), but its traffic outlives the command that made it: once
// the session is made, that command hands the gateway's sockets to the
// session's keeper (ExtraFiles, keeperGatewayEnv), which serves them under
// the session's allowlist and quota until the sandbox ends. What the
// sandbox sends in between waits in the sockets. A keeper started again
// later (the first died) listens again where its table redirects, as
// NetFile records. The link goes with the session: destroy
// releases it by its run directory, and the reaper's sweep removes any
// whose run directory is gone (a maker killed while making it).

const (
	// NetFile records a session's gateway address and its
	// allowlist now, for a keeper started again.
	NetFile = "net.json"
	// keeperGatewayEnv tells a keeper that its gateway's sockets are its
	// files 3, 4 and 5 (its lock, held, comes after: keeperLockEnv).
	keeperGatewayEnv = "BOXER_KEEPER_GATEWAY"
)

// sessionNet is a session's network as its keeper serves it.
type sessionNet struct {
	Gateway  egress.GatewayAddr `json:"gateway"`
	Allow    []string           `json:"allow"`
	NetBytes int64              `json:"net_bytes"`
	// The operator's settings the session was made with: whichever
	// boxer command starts its keeper again, it serves the session as
	// it was made.
	UpstreamDNS string `json:"upstream_dns,omitempty"`
	Netns       string `json:"netns,omitempty"`
	AllowNoSNI  bool   `json:"allow_no_sni,omitempty"`
}

// HandLink records the made session's network and starts its keeper with
// the gateway's sockets and ks, its secrets; this process's gateway
// closes.
func (r *Layer) HandLink(ctx context.Context, sb *box.Sandbox, ks *Secrets) error {
	e := r.Egress
	rec := sessionNet{Gateway: sb.Link.GatewayAddr(), Allow: sb.Req.AllowHosts, NetBytes: sb.Req.NetBytes, UpstreamDNS: e.Upstream, Netns: e.Netns, AllowNoSNI: e.AllowNoSNI}
	if err := writeSessionNet(sb.RunDir, rec); err != nil {
		return err
	}
	files, err := sb.Link.GatewayFiles()
	if err != nil {
		return err
	}
	// The keeper gets the lock held: a keeper another command starts
	// before this one runs finds the session kept, and leaves the
	// gateway's addresses to the sockets handed on.
	if err := r.HandKeeper(ctx, sb, Handoff{gateway: files, Secrets: ks}); err != nil {
		return err
	}
	sb.Link.Leave()
	return nil
}

func writeSessionNet(runDir string, rec sessionNet) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := reaper.WriteFileAtomic(filepath.Join(runDir, NetFile), data, 0o600); err != nil {
		return fmt.Errorf("writing the session's network record: %w", err)
	}
	return nil
}

func readSessionNet(runDir string) (sessionNet, error) {
	var rec sessionNet
	data, err := os.ReadFile(filepath.Join(runDir, NetFile))
	if errors.Is(err, os.ErrNotExist) {
		return rec, contract.ErrNoNetwork
	} else if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(data, &rec)
}

// inheritedKeeperLock is the keeper's lock its maker handed it, held;
// nil when it was not.
func inheritedKeeperLock() *os.File {
	n, err := strconv.Atoi(os.Getenv(keeperLockEnv))
	if err != nil {
		return nil
	}
	os.Unsetenv(keeperLockEnv)
	return os.NewFile(uintptr(n), keeperLock)
}

// keeperGateway starts the session's gateway in its keeper: on the
// sockets its maker handed on, or again where its table redirects. nil
// for a session without network. ks are the session's secrets its maker
// handed on: with them, the gateway injects their headers.
func (r *Layer) keeperGateway(runDir string, ks *Secrets) (*egress.Gateway, error) {
	rec, err := readSessionNet(runDir)
	if errors.Is(err, contract.ErrNoNetwork) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	e := box.EgressSetup{Upstream: rec.UpstreamDNS, Netns: rec.Netns, AllowNoSNI: rec.AllowNoSNI}
	if e.Netns != "" {
		if e.Dial, err = egress.NetnsDialer(e.Netns); err != nil {
			return nil, fmt.Errorf("egress namespace %s: %w", e.Netns, err)
		}
	}
	cfg, err := e.GatewayConfig(rec.Allow, rec.NetBytes)
	if err != nil {
		return nil, err
	}
	if cfg.CA, err = ks.gatewayCA(); err != nil {
		return nil, err
	}
	if cfg.CA != nil {
		cfg.Inject = ks.Inject
	}
	var gw *egress.Gateway
	if n, _ := strconv.Atoi(os.Getenv(keeperGatewayEnv)); n == 3 {
		os.Unsetenv(keeperGatewayEnv)
		gw, err = egress.ServeFiles([]*os.File{os.NewFile(3, "proxy"), os.NewFile(4, "dns-udp"), os.NewFile(5, "dns-tcp")})
	} else {
		gw, err = egress.ListenAt(rec.Gateway)
	}
	if err != nil {
		return nil, err
	}
	gw.Start(cfg)
	return gw, nil
}

// ReleaseSessionLink removes the link of the session whose run directory
// is runDir, if it has one (its keeper served its gateway).
func (r *Layer) ReleaseSessionLink(runDir string) error {
	if _, err := os.Stat(filepath.Join(runDir, NetFile)); err != nil {
		return nil
	}
	if err := egress.Release(r.Egress.Opts.Dir, runDir); err != nil {
		return fmt.Errorf("removing the session's network link: %w", err)
	}
	return nil
}

// SessionNetwork is what session id of caller ("" for any) did on the
// network since it was made.
func (r *Layer) SessionNetwork(ctx context.Context, id, caller string) (egress.Report, error) {
	var rep egress.Report
	err := r.toKeeper(ctx, id, caller, func(kc *Client) error {
		return kc.Call(ctx, "GET", "/network", nil, nil, &rep)
	})
	return rep, err
}

// SetSessionAllow replaces the allowlist of session id of caller ("" for
// any) within the operator's (max.AllowHosts): new names and connections
// are checked against it, those open stay; an empty list cuts the
// network (the gateway stays, allowing nothing). It returns the report
// under the new list.
func (r *Layer) SetSessionAllow(ctx context.Context, id, caller string, hosts []string, max contract.Maxima) (egress.Report, error) {
	req := contract.Request{AllowHosts: hosts}
	if err := req.WithinAllowlist(max.AllowHosts); err != nil {
		return egress.Report{}, err
	}
	var rep egress.Report
	err := r.toKeeper(ctx, id, caller, func(kc *Client) error {
		return kc.Call(ctx, "PUT", "/network/allow", nil, jsonBody(hosts), &rep)
	})
	return rep, err
}

// netRoutes are the keeper's network API.
func (k *keeper) netRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /network", func(w http.ResponseWriter, r *http.Request) {
		if k.gw == nil {
			keeperError(w, k.noGateway())
			return
		}
		writeKeeperJSON(w, k.gw.Report())
	})
	mux.HandleFunc("PUT /network/allow", func(w http.ResponseWriter, r *http.Request) {
		var hosts []string
		if err := json.NewDecoder(r.Body).Decode(&hosts); err != nil {
			keeperError(w, contract.FieldErr(contract.FieldAllowHosts, "bad list: %v", err))
			return
		}
		if k.gw == nil {
			keeperError(w, k.noGateway())
			return
		}
		if err := k.setAllow(hosts); err != nil {
			keeperError(w, err)
			return
		}
		writeKeeperJSON(w, k.gw.Report())
	})
}

// noGateway says why the keeper serves no network.
func (k *keeper) noGateway() error {
	if k.gwErr != nil {
		return fmt.Errorf("the session's gateway is not running: %w", k.gwErr)
	}
	return contract.ErrNoNetwork
}

// setAllow puts hosts in force and in the record, for a keeper started
// again.
func (k *keeper) setAllow(hosts []string) error {
	policy, err := egress.ParsePolicy(hosts)
	if err != nil {
		return contract.FieldErr(contract.FieldAllowHosts, "%v", err)
	}
	k.netMu.Lock()
	defer k.netMu.Unlock()
	rec, err := readSessionNet(k.runDir)
	if err != nil {
		return err
	}
	rec.Allow = hosts
	if err := writeSessionNet(k.runDir, rec); err != nil {
		return err
	}
	return k.gw.SetPolicy(policy)
}

// CallNetwork reads the session's report before a call and returns what
// gives, after it, what the session's network did meanwhile (its calls'
// and its background processes', as cpu_time_ms counts them): nil for a
// session without network, or when its keeper cannot be reached. It
// starts the keeper if it died: the gateway lives in it.
func (r *Layer) CallNetwork(ctx context.Context, id string, req contract.Request) func() *egress.Report {
	none := func() *egress.Report { return nil }
	if len(req.AllowHosts) == 0 {
		return none
	}
	kc, err := r.keeperFor(ctx, id, "")
	if err != nil {
		log.G(ctx).WithError(err).Warnf("session %s: reaching its keeper", id)
		return none
	}
	var before egress.Report
	if err := kc.Call(ctx, "GET", "/network", nil, nil, &before); err != nil {
		return none
	}
	return func() *egress.Report {
		var after egress.Report
		if err := kc.Call(context.WithoutCancel(ctx), "GET", "/network", nil, nil, &after); err != nil {
			return nil
		}
		d := after
		d.Connections -= before.Connections
		d.BytesIn -= before.BytesIn
		d.BytesOut -= before.BytesOut
		d.Intercepted -= before.Intercepted
		d.DeniedTotal -= before.DeniedTotal
		// The report keeps the first distinct denials in order: those
		// past the ones before are new.
		d.Denied = nil
		if len(after.Denied) > len(before.Denied) {
			d.Denied = after.Denied[len(before.Denied):]
		}
		return &d
	}
}
