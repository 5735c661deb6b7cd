//go:build !boxer_cli

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/boxer-dev/boxer/fleet"
	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// fleetFlags make serve a member of a fleet (docs/fleet.md).
func fleetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "fleet-peers", Usage: "be one server of a fleet whose servers' fleet listeners are `NAME` in DNS: an SRV name (_fleet._tcp.boxer-peers.boxer.svc.cluster.local) or a host name whose addresses listen on --fleet-listen's port; a session's calls reaching another server are forwarded to the one holding it"},
		&cli.StringFlag{Name: "fleet-listen", Usage: "`ADDR` of the fleet listener, where the fleet's servers reach each other over mutual TLS with the fleet key (default: --listen's host, port " + strconv.Itoa(defaultFleetPort) + ")"},
		&cli.StringFlag{Name: "fleet-key-file", Usage: "the fleet's shared key (32 bytes or more) in `FILE`: it signs session IDs, and the servers' TLS key pair is derived from it"},
		&cli.StringFlag{Name: "fleet-node", EnvVars: []string{"NODE_NAME"}, Usage: "`NAME` of the node this server holds sessions on (Kubernetes' spec.nodeName)"},
		&cli.StringFlag{Name: "fleet-dns", Usage: "ask the DNS server at `HOST:PORT` for --fleet-peers instead of the system's"},
		&cli.DurationFlag{Name: "drain-grace", Usage: "on SIGTERM in a fleet, how long sessions held here are still answered (new ones go to other servers) before the server stops; then --shutdown-grace, and the sessions left are the next server's"},
	}
}

// defaultFleetPort is the fleet listener's port when --fleet-listen is not
// given.
const defaultFleetPort = 8081

// fleetMember reads the fleet flags and listens on the fleet listener;
// nil, nil without --fleet-peers.
func fleetMember(c *cli.Context, listen string, e2b bool) (*fleet.Fleet, net.Listener, error) {
	peers := c.String("fleet-peers")
	if peers == "" {
		for _, f := range []string{"fleet-key-file", "fleet-dns", "fleet-listen", "drain-grace"} {
			if c.IsSet(f) {
				return nil, nil, fail("--%s needs --fleet-peers", f)
			}
		}
		return nil, nil, nil
	}
	if c.String("fleet-key-file") == "" {
		return nil, nil, fail("--fleet-peers needs --fleet-key-file: the fleet's shared key signs session IDs")
	}
	key, err := os.ReadFile(c.String("fleet-key-file"))
	if err != nil {
		return nil, nil, fail("--fleet-key-file: %v", err)
	}
	node := c.String("fleet-node")
	if node == "" {
		if node, err = os.Hostname(); err != nil {
			return nil, nil, fail("--fleet-node: no node name given and no host name: %v", err)
		}
	}
	addr := c.String("fleet-listen")
	if addr == "" {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, nil, fail("--listen %s: %v", listen, err)
		}
		addr = net.JoinHostPort(host, strconv.Itoa(defaultFleetPort))
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fail("--fleet-listen %s: want HOST:PORT", addr)
	}
	cfg := fleet.Config{Key: bytes.TrimSpace(key), Node: node, Peers: peers, DNS: c.String("fleet-dns"), E2B: e2b}
	cfg.Port, _ = strconv.Atoi(port)
	f, err := fleet.New(cfg)
	if err != nil {
		return nil, nil, fail("--fleet-peers: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fail("--fleet-listen: listening on %s: %v", addr, err)
	}
	return f, tls.NewListener(ln, f.ServerTLS()), nil
}

// fleetServer serves the fleet listener: the other members' probes and
// forwarded requests, to the API or E2B's handler (nil: none).
func fleetServer(f *fleet.Fleet, api, e2b http.Handler) *http.Server {
	return &http.Server{
		Handler:           f.Handler(api, e2b),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// A handshake that never ends is not logged: the probes of
		// whatever else DNS lists, and scanners, are not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

// fleetIDs makes the runner's session IDs name this node.
func fleetIDs(f *fleet.Fleet) func(*runner.Options) {
	return func(o *runner.Options) {
		if f != nil {
			o.SessionID = f.NewID
		}
	}
}

// drain keeps answering for the sessions held here, sending new ones to
// other servers, until none is left or grace is over.
func drain(f *fleet.Fleet, r *runner.Runner, grace time.Duration, handOver bool) {
	if f == nil || grace <= 0 {
		return
	}
	f.SetDraining()
	deadline := time.Now().Add(grace)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		held, err := r.Sessions(ctx, "")
		cancel()
		if err == nil && len(held) == 0 {
			fmt.Fprintln(os.Stderr, "boxer: draining: no session left")
			return
		}
		if time.Now().After(deadline) {
			what := "ending them"
			if handOver {
				what = "leaving them to the next server"
			}
			fmt.Fprintf(os.Stderr, "boxer: draining: %d sessions left after --drain-grace: %s\n", len(held), what)
			return
		}
		time.Sleep(time.Second)
	}
}
