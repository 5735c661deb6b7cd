package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/containerd/log"
)

// egressSetup is how the runner gives sandboxes their way out.
type egressSetup struct {
	opts egress.Options
	// upstream is the resolver allowed names are asked of; dial opens
	// upstream connections (from the operator's namespace, if set).
	upstream   string
	netns      string
	dial       egress.Dialer
	allowNoSNI bool
}

// newEgressSetup checks the operator's egress settings.
func newEgressSetup(state string, o EgressOptions) (egressSetup, error) {
	if o.Range == "" {
		o.Range = egress.DefaultRange
	}
	rng, err := egress.ParseRange(o.Range)
	if err != nil {
		return egressSetup{}, err
	}
	e := egressSetup{opts: egress.Options{Dir: egress.LeaseDir, Range: rng}, upstream: o.UpstreamDNS, netns: o.Netns, allowNoSNI: o.AllowNoSNI}
	if o.Netns != "" {
		if e.dial, err = egress.NetnsDialer(o.Netns); err != nil {
			return egressSetup{}, fmt.Errorf("egress namespace %s: %w", o.Netns, err)
		}
	}
	return e, nil
}

// attachLink makes the sandbox's link (its namespace, interfaces, rules
// and gateway) and the resolv.conf that points at the gateway.
func (sb *sandbox) attachLink() error {
	l, err := egress.Attach(sb.r.egress.opts, sb.runDir, filepath.Join(sb.runDir, "netns"))
	if err != nil {
		return fmt.Errorf("making the sandbox's network link: %w", err)
	}
	sb.link = l
	sb.dirs.Net = &box.Net{Netns: l.Netns, ResolvConf: filepath.Join(sb.runDir, "resolv.conf"), Env: l.Env()}
	if err := os.WriteFile(sb.dirs.Net.ResolvConf, l.ResolvConf(), 0o644); err != nil {
		return fmt.Errorf("writing resolv.conf: %w", err)
	}
	return nil
}

// startLink lets the sandbox's traffic out under its delivered allowlist.
func (sb *sandbox) startLink(d contract.Delivery) error {
	cfg, err := sb.r.egress.gatewayConfig(d.AllowHosts, d.NetBytes)
	if err != nil {
		return err
	}
	cfg.Inject, cfg.CA = sb.injections, sb.ca
	sb.link.Start(cfg)
	return nil
}

// gatewayConfig is what a sandbox's gateway enforces for an allowlist
// and a quota, with the operator's settings e: a run's, a session's (its
// keeper's).
func (e egressSetup) gatewayConfig(allow []string, netBytes int64) (egress.Config, error) {
	policy, err := egress.ParsePolicy(allow)
	if err != nil {
		return egress.Config{}, contract.FieldErr(contract.FieldAllowHosts, "%v", err)
	}
	upstream := e.upstream
	if upstream == "" {
		if upstream, err = egress.HostResolver(); err != nil {
			return egress.Config{}, err
		}
	}
	return egress.Config{
		Policy: policy, MaxBytes: netBytes, MaxConns: contract.DefaultNetConns, UpstreamDNS: upstream, Dial: e.dial,
		AllowNoSNI: e.allowNoSNI,
	}, nil
}

// sweepLinks removes what sandboxes whose run directory is gone left of
// their links (the reaper's last step: it has removed the run directories
// of dead boxer processes).
func (r *Runner) sweepLinks(ctx context.Context) {
	if err := egress.Sweep(r.egress.opts.Dir); err != nil {
		log.G(ctx).WithError(err).Warn("sweeping network links")
	}
}
