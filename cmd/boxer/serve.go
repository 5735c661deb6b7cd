//go:build !boxer_cli

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/server"
	"github.com/urfave/cli/v2"
)

func serveCommand() *cli.Command {
	cpus := runtime.NumCPU()
	cmd := &cli.Command{
		Name:  "serve",
		Usage: "serve runs and sessions over HTTP: POST /v1/runs, /v1/sessions (their runs and files), GET /healthz, /metrics, /v1/openapi.json",
		Description: `The HTTP API of docs/http.md: POST /v1/runs runs code in a fresh sandbox;
POST /v1/sessions makes a session, POST /v1/sessions/ID/runs runs code in it,
PUT and GET /v1/sessions/ID/files/PATH move its files, DELETE ends it.
Requests are capped by the --max-* flags; a listen address other than
loopback needs --token-file. SIGTERM or SIGINT lets runs in flight finish
(--shutdown-grace); SIGTERM (an upgrade, a restart) then leaves the
sessions running for the next server, which takes them over, and SIGINT
ends them.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "`ADDR` to listen on; a non-loopback address needs --token-file"},
			&cli.StringFlag{Name: "token-file", Usage: "require 'Authorization: Bearer <token>' with a token in `FILE` (one per line; each a caller of its own)"},
			&cli.BoolFlag{Name: "public-health", Usage: "leave GET /healthz and GET /metrics open without the token (for probes and scrapers)"},
			&cli.StringFlag{Name: "runtime", Value: runner.DefaultRuntime, Usage: "runtime of requests that name none: " + strings.Join(runner.Runtimes(), " or ")},
			&cli.StringFlag{Name: "audit-log", Usage: "append one JSON line per request to `FILE`"},
			&cli.IntFlag{Name: "concurrency", Value: cpus, Usage: "sandboxes running at once"},
			&cli.IntFlag{Name: "queue", Value: 4 * cpus, Usage: "requests waiting for a slot before 429"},
			&cli.StringFlag{Name: "max-body", Value: "1MiB", Usage: "largest request body (413 beyond)"},
			&cli.DurationFlag{Name: "max-timeout", Value: 5 * time.Minute, Usage: "largest timeout a request may ask"},
			&cli.StringFlag{Name: "max-memory", Value: "1GiB", Usage: "largest memory a request may ask"},
			&cli.Float64Flag{Name: "max-cpus", Value: float64(cpus), Usage: "largest cpus a request may ask"},
			&cli.Int64Flag{Name: "max-pids", Value: 256, Usage: "largest pids a request may ask"},
			&cli.StringFlag{Name: "max-tmp-size", Value: "512MiB", Usage: "largest tmp_size a request may ask"},
			&cli.StringFlag{Name: "max-output-limit", Value: "16MiB", Usage: "largest output_limit a request may ask"},
			&cli.DurationFlag{Name: "shutdown-grace", Value: 30 * time.Second, Usage: "on SIGTERM, how long runs in flight may finish before they are killed"},
		},
		Action: serveAction,
	}
	cmd.Flags = append(cmd.Flags, warmFlags(cpus)...)
	cmd.Flags = append(cmd.Flags, readyFlags()...)
	cmd.Flags = append(cmd.Flags, shimFlags()...)
	cmd.Flags = append(cmd.Flags, operatorNetFlags()...)
	cmd.Flags = append(cmd.Flags, usernsFlag())
	cmd.Flags = append(cmd.Flags, operatorFileFlags()...)
	cmd.Flags = append(cmd.Flags, operatorSecretFlags()...)
	cmd.Flags = append(cmd.Flags, operatorSessionFlags()...)
	cmd.Flags = append(cmd.Flags, e2bFlags()...)
	cmd.Flags = append(cmd.Flags, fleetFlags()...)
	return cmd
}

func serveAction(c *cli.Context) error {
	longLivedGC()
	cfg := server.Config{
		Concurrency: c.Int("concurrency"),
		Queue:       c.Int("queue"),
		Max: runner.Maxima{
			Timeout: c.Duration("max-timeout"),
			CPUs:    c.Float64("max-cpus"),
			Pids:    c.Int64("max-pids"),
		},
	}
	cfg.Runtime, cfg.PublicHealth = c.String("runtime"), c.Bool("public-health")
	if !slices.Contains(runner.Runtimes(), cfg.Runtime) {
		return fail("--runtime must be %s, not %q", strings.Join(runner.Runtimes(), " or "), cfg.Runtime)
	}
	if cfg.Concurrency < 1 || cfg.Queue < 0 {
		return fail("--concurrency must be at least 1 and --queue not negative")
	}
	var err error
	for _, s := range []struct {
		flag string
		dst  *int64
	}{{"max-body", &cfg.MaxBody}, {"max-memory", &cfg.Max.MemoryBytes}, {"max-tmp-size", &cfg.Max.TmpBytes}, {"max-output-limit", &cfg.Max.OutputLimit}, {"max-net-bytes", &cfg.Max.NetBytes}, {"max-return-bytes", &cfg.Max.ReturnBytes}} {
		if *s.dst, err = sizeFlag(c, s.flag); err != nil {
			return err
		}
	}
	if cfg.Max.AllowHosts, err = operatorAllowlist(c); err != nil {
		return err
	}
	if cfg.Max.Preload, err = preloads(c, false); err != nil {
		return err
	}
	if cfg.Sessions, err = sessionMaxima(c); err != nil {
		return err
	}
	listen := c.String("listen")
	if p := c.String("token-file"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			return fail("--token-file: %v", err)
		}
		// One token per line: each is a caller of its own (sessions
		// belong to the token that made them).
		for _, line := range strings.Split(string(data), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				cfg.Tokens = append(cfg.Tokens, t)
			}
		}
		for _, t := range cfg.Tokens {
			if len(t) < 16 {
				return fail("--token-file %s: each token must be at least 16 characters", p)
			}
		}
		if len(cfg.Tokens) == 0 {
			return fail("--token-file %s: no token in it", p)
		}
	} else if !loopback(listen) {
		return fail("refusing to listen on %s without --token-file: anyone who can reach it could run code on this host", listen)
	}
	if p := c.String("audit-log"); p != "" {
		f, err := openAuditLog(p)
		if err != nil {
			return err
		}
		defer f.Close()
		// One log for every listener: boxer's API and E2B's.
		cfg.Audit = audit.New(f)
	}
	// The port first: one in use is said at once, not after the set-up
	// of containerd, the pool and the secrets.
	ln, err := listenOn(listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	e2bLn, e2bKeyList, err := e2bListen(c)
	if err != nil {
		return err
	}
	if max(1, len(cfg.Tokens))+len(e2bKeyList) == 1 && cfg.Sessions.PerCaller == 0 {
		// One caller (no E2B keys, one token or none: anonymous): its
		// fair share is every session.
		cfg.Sessions.PerCaller = cfg.Sessions.Sessions
	}
	if e2bLn != nil {
		defer e2bLn.Close()
	}
	tlsCfg, err := tlsConfig(c)
	if err != nil {
		return err
	}
	var fleetLn net.Listener
	if cfg.Fleet, fleetLn, err = fleetMember(c, listen, e2bLn != nil); err != nil {
		return err
	}
	if fleetLn != nil {
		defer fleetLn.Close()
	}

	shims, err := shimOptions(c)
	if err != nil {
		return err
	}
	set, err := loadSecrets(c)
	if err != nil {
		return err
	}
	ceilings, err := ceilingOptions(c)
	if err != nil {
		return err
	}
	r, err := connect(c, os.Stderr, true, set.options, shims, ceilings, fleetIDs(cfg.Fleet))
	if err != nil {
		return err
	}
	defer r.Close()
	if ids := r.AdoptSessions(c.Context, server.SessionHeir); len(ids) > 0 {
		fmt.Fprintf(os.Stderr, "boxer: took over %d session(s) a server before this one held: %s\n", len(ids), strings.Join(ids, " "))
	}
	srv := server.New(r, cfg)
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A slow body is cut off instead of holding a connection forever.
		ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
	}
	if h := r.Health(c.Context); !h.OK {
		fmt.Fprintf(os.Stderr, "boxer: warning: not every preset's image is there (%v): run 'boxer setup'\n", h.Images)
	}
	if err := startWarm(c, r, cfg.Max); err != nil {
		return err
	}
	if err := startReady(c, r, cfg.Max, cfg.Sessions, cfg.Runtime); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "boxer: serving on http://%s (concurrency %d, queue %d)\n", ln.Addr(), cfg.Concurrency, cfg.Queue)
	errc := make(chan error, 3)
	go func() { errc <- hs.Serve(ln) }()
	var es *http.Server
	if e2bLn != nil {
		if es, err = e2bHTTPServer(c, r, cfg, e2bKeyList); err != nil {
			return err
		}
		scheme := "http"
		if tlsCfg != nil {
			scheme, es.TLSConfig = "https", tlsCfg
			e2bLn = tls.NewListener(e2bLn, tlsCfg)
		}
		fmt.Fprintf(os.Stderr, "boxer: serving E2B's API on %s://%s (%d keys)\n", scheme, e2bLn.Addr(), len(e2bKeyList))
		go func() { errc <- es.Serve(e2bLn) }()
		defer es.Close()
	}
	var fs *http.Server
	if fleetLn != nil {
		var e2bHandler http.Handler
		if es != nil {
			e2bHandler = es.Handler
		}
		fs = fleetServer(cfg.Fleet, hs.Handler, e2bHandler)
		fmt.Fprintf(os.Stderr, "boxer: serving the fleet's members on %s (mutual TLS with the fleet key)\n", fleetLn.Addr())
		go func() { errc <- fs.Serve(fleetLn) }()
		defer fs.Close()
	}
	select {
	case err := <-errc:
		return fail("serving: %v", err)
	case <-c.Context.Done():
	}
	// SIGTERM is a service manager's stop (an upgrade, a restart, a pod
	// rolled): the sessions with an heir are left running for the next
	// server, which takes them over. SIGINT and SIGHUP (a terminal's)
	// end them, so that a stop by hand leaves nothing behind.
	sig, _ := caught.Load().(syscall.Signal)
	handOver := sig == syscall.SIGTERM
	if cfg.Fleet != nil && c.Duration("drain-grace") > 0 {
		fmt.Fprintf(os.Stderr, "boxer: draining: sessions held here are answered for up to %s, new ones go to other servers\n", c.Duration("drain-grace"))
		drain(cfg.Fleet, r, c.Duration("drain-grace"), handOver)
	}
	// SIGTERM or SIGINT: stop accepting, let runs in flight finish within
	// the grace period, then kill (and clean up) the rest.
	grace := c.Duration("shutdown-grace")
	fmt.Fprintf(os.Stderr, "boxer: shutting down: runs in flight have %s to finish\n", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shut := make(chan struct{})
	go func() {
		if es != nil {
			_ = es.Shutdown(ctx)
		}
		if fs != nil {
			_ = fs.Shutdown(ctx)
		}
		_ = hs.Shutdown(ctx)
		close(shut)
	}()
	if handOver {
		if left := srv.HandOver(ctx); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "boxer: left %d session(s) running for the next server (SIGTERM; SIGINT ends them): %s\n", len(left), strings.Join(left, " "))
		}
	} else {
		srv.Shutdown(ctx)
	}
	// The handlers have returned: net/http may still be ending their
	// answers (a streamed body's last chunk) before the connections close.
	select {
	case <-shut:
	case <-time.After(2 * time.Second):
	}
	_ = hs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail("serving: %v", err)
	}
	fmt.Fprintln(os.Stderr, "boxer: stopped")
	return nil
}

// openAuditLog opens the audit log for appending, making its directory
// (0700: the log names callers and code) if it is missing, as on a fresh
// host for /var/log/boxer/audit.jsonl.
func openAuditLog(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fail("--audit-log %s: %v", p, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fail("--audit-log: %v", err)
	}
	return f, nil
}

// listenOn listens on addr; an address in use is one line naming a port
// that is free now.
func listenOn(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if free := freePortNear(addr); free != "" {
			return nil, fail("listen %s: address is in use: pick another with --listen %s", addr, free)
		}
		return nil, fail("listen %s: address is in use: pick another with --listen HOST:PORT", addr)
	}
	if err != nil {
		return nil, fail("listening on %s: %v", addr, err)
	}
	return ln, nil
}

// loopback reports whether addr listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
