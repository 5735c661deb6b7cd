package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/containerd/log"
)

// EgressSetup is how the Host gives sandboxes their way out.
type EgressSetup struct {
	// Opts are the links' leases and addresses.
	Opts egress.Options
	// Upstream is the resolver allowed names are asked of; Dial opens
	// upstream connections (from the operator's namespace Netns, if
	// set).
	Upstream   string
	Netns      string
	Dial       egress.Dialer
	AllowNoSNI bool
}

// NewEgressSetup checks the operator's egress settings.
func NewEgressSetup(o EgressOptions) (EgressSetup, error) {
	if o.Range == "" {
		o.Range = egress.DefaultRange
	}
	rng, err := egress.ParseRange(o.Range)
	if err != nil {
		return EgressSetup{}, err
	}
	e := EgressSetup{Opts: egress.Options{Dir: egress.LeaseDir, Range: rng}, Upstream: o.UpstreamDNS, Netns: o.Netns, AllowNoSNI: o.AllowNoSNI}
	if o.Netns != "" {
		if e.Dial, err = egress.NetnsDialer(o.Netns); err != nil {
			return EgressSetup{}, fmt.Errorf("egress namespace %s: %w", o.Netns, err)
		}
	}
	return e, nil
}

// attachLink makes the sandbox's link (its namespace, interfaces, rules
// and gateway) and the resolv.conf that points at the gateway.
func (sb *Sandbox) attachLink() error {
	l, err := egress.Attach(sb.h.Egress.Opts, sb.RunDir, filepath.Join(sb.RunDir, "netns"))
	if err != nil {
		return fmt.Errorf("making the sandbox's network link: %w", err)
	}
	sb.Link = l
	sb.Dirs.Net = &Net{Netns: l.Netns, ResolvConf: filepath.Join(sb.RunDir, "resolv.conf"), Env: l.Env()}
	if err := os.WriteFile(sb.Dirs.Net.ResolvConf, l.ResolvConf(), 0o644); err != nil {
		return fmt.Errorf("writing resolv.conf: %w", err)
	}
	return nil
}

// startLink lets the sandbox's traffic out under its delivered allowlist.
func (sb *Sandbox) startLink(d contract.Delivery) error {
	cfg, err := sb.h.Egress.GatewayConfig(d.AllowHosts, d.NetBytes)
	if err != nil {
		return err
	}
	cfg.Inject, cfg.CA = sb.Injections, sb.CA
	sb.Link.Start(cfg)
	return nil
}

// GatewayConfig is what a sandbox's gateway enforces for an allowlist
// and a quota, with the operator's settings e: a run's, a session's (its
// keeper's).
func (e EgressSetup) GatewayConfig(allow []string, netBytes int64) (egress.Config, error) {
	policy, err := egress.ParsePolicy(allow)
	if err != nil {
		return egress.Config{}, contract.FieldErr(contract.FieldAllowHosts, "%v", err)
	}
	upstream := e.Upstream
	if upstream == "" {
		if upstream, err = egress.HostResolver(); err != nil {
			return egress.Config{}, err
		}
	}
	return egress.Config{
		Policy: policy, MaxBytes: netBytes, MaxConns: contract.DefaultNetConns, UpstreamDNS: upstream, Dial: e.Dial,
		AllowNoSNI: e.AllowNoSNI,
	}, nil
}

// SweepLinks removes what sandboxes whose run directory is gone left of
// their links (the reaper's last step: it has removed the run directories
// of dead boxer processes).
func (h *Host) SweepLinks(ctx context.Context) {
	if err := egress.Sweep(h.Egress.Opts.Dir); err != nil {
		log.G(ctx).WithError(err).Warn("sweeping network links")
	}
}
