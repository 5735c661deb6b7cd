//go:build !boxer_cli

package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/e2b"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/server"
	"github.com/urfave/cli/v2"
)

// E2B's API beside boxer's (docs/e2b.md): its own listener and keys, the
// same runner, caps and sessions.

func e2bFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "e2b-listen", Usage: "also serve E2B's API (control plane, envd, code interpreter, ports) on `ADDR`, for E2B's SDKs"},
		&cli.StringFlag{Name: "e2b-key-file", Usage: "E2B API keys (e2b_<hex>, one per line) accepted on --e2b-listen, in `FILE`; each a caller of its own"},
		&cli.StringFlag{Name: "e2b-default-network", Value: e2b.DefaultNetworkNone, Usage: "what an E2B sandbox gets for allow_internet_access: true without network.allowOut (every SDK up to 2.50 sends it): `none` (no network) or allowlist (the whole --allow-host list)"},
		&cli.BoolFlag{Name: "e2b-public-ports", Usage: "a sandbox that does not set network.allowPublicTraffic gets ports anyone who knows its host name reaches, as on E2B's cloud; without it, they need the sandbox's traffic token (envd always needs its access token)"},
		&cli.StringFlag{Name: "e2b-domain", Usage: "route <port>-<sandboxID>.`DOMAIN` host names to sandboxes (E2B_DOMAIN for the SDKs; a wildcard DNS name and certificate); DOMAIN:PORT when the listener is not on 443"},
		&cli.StringSliceFlag{Name: "e2b-build-allow-host", Usage: "let E2B template builds' steps (Template.build) reach `HOST[:PORT]` (repeatable, as image build's --allow-host); default: no network"},
		&cli.IntFlag{Name: "e2b-max-snapshots", Value: e2b.DefaultMaxSnapshots, Usage: "the most snapshots (Sandbox.createSnapshot, on gVisor) one E2B key keeps at once, each its sandbox's memory and files on disk, until deleted"},
		&cli.StringFlag{Name: "tls-cert", Usage: "serve E2B's API over HTTPS with the certificate chain in `FILE` (PEM; with --tls-key)"},
		&cli.StringFlag{Name: "tls-key", Usage: "the private key of --tls-cert, in `FILE` (PEM)"},
	}
}

// tlsConfig reads --tls-cert and --tls-key; nil without them.
func tlsConfig(c *cli.Context) (*tls.Config, error) {
	cert, key := c.String("tls-cert"), c.String("tls-key")
	if cert == "" && key == "" {
		return nil, nil
	}
	if c.String("e2b-listen") == "" {
		return nil, fail("--tls-cert and --tls-key serve --e2b-listen: give that too")
	}
	if cert == "" || key == "" {
		return nil, fail("--tls-cert and --tls-key go together: give both")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fail("--tls-cert %s, --tls-key %s: %v", cert, key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// e2bKeys reads --e2b-key-file.
func e2bKeys(p string) ([]string, error) {
	if p == "" {
		return nil, fail("--e2b-listen needs --e2b-key-file: E2B's SDKs always send an API key, and boxer checks it")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fail("--e2b-key-file: %v", err)
	}
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		k := strings.TrimSpace(line)
		if k == "" || strings.HasPrefix(k, "#") {
			continue
		}
		if err := e2b.CheckKey(k); err != nil {
			return nil, fail("--e2b-key-file %s: %v", p, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fail("--e2b-key-file %s: no key in it", p)
	}
	return keys, nil
}

// e2bListen opens the E2B listener (nil without --e2b-listen) and reads
// its keys, at once: a port in use is said before set-up.
func e2bListen(c *cli.Context) (net.Listener, []string, error) {
	addr := c.String("e2b-listen")
	if addr == "" {
		for _, f := range []string{"e2b-key-file", "e2b-domain", "e2b-default-network", "e2b-public-ports", "e2b-build-allow-host", "e2b-max-snapshots"} {
			if c.IsSet(f) {
				return nil, nil, fail("--%s is for --e2b-listen: give that too", f)
			}
		}
		return nil, nil, nil
	}
	switch v := c.String("e2b-default-network"); {
	case v != e2b.DefaultNetworkNone && v != e2b.DefaultNetworkAllowlist:
		return nil, nil, fail("--e2b-default-network must be %s or %s, not %q", e2b.DefaultNetworkNone, e2b.DefaultNetworkAllowlist, v)
	case v == e2b.DefaultNetworkAllowlist && len(c.StringSlice("allow-host")) == 0:
		return nil, nil, fail("--e2b-default-network %s gives sandboxes the --allow-host list, and none is given: give --allow-host HOST, or leave it %s", v, e2b.DefaultNetworkNone)
	}
	if n := c.Int("e2b-max-snapshots"); n < 1 {
		return nil, nil, fail("--e2b-max-snapshots must be at least 1, not %d", n)
	}
	keys, err := e2bKeys(c.String("e2b-key-file"))
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fail("--e2b-listen %s: %v", addr, err)
	}
	return ln, keys, nil
}

// e2bHTTPServer serves E2B's API on r with the boxer server's caps.
func e2bHTTPServer(c *cli.Context, r *runner.Runner, cfg server.Config, keys []string) (*http.Server, error) {
	// Its sandboxes are the node's, as boxer's sessions are: their records
	// wait for the next server in boxer's state directory.
	records := filepath.Join(daemon.FromEnv().State, "e2b", c.String("namespace"))
	srv, err := e2b.New(r, e2b.Config{Keys: keys, Domain: c.String("e2b-domain"), DefaultNetwork: c.String("e2b-default-network"), PublicPorts: c.Bool("e2b-public-ports"), Max: cfg.Max, Sessions: cfg.Sessions, Runtime: cfg.Runtime, MaxBody: cfg.MaxBody, Fleet: cfg.Fleet, Audit: cfg.Audit, Records: records, Heir: server.SessionHeir,
		BuildAllowHosts: c.StringSlice("e2b-build-allow-host"),
		MaxSnapshots:    c.Int("e2b-max-snapshots"),
		BuildDir:        filepath.Join(daemon.FromEnv().Root, "e2b-builds", c.String("namespace")),
		Build:           e2bBuilder(r, cfg.Runtime)})
	if err != nil {
		return nil, fail("%v", err)
	}
	return &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}, nil
}
