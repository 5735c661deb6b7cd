//go:build !boxer_cli

package main

import (
	"context"
	"os"
	"runtime"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/server"
	"github.com/urfave/cli/v2"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "speak the Model Context Protocol on stdio: tools that run code, and make and use sessions",
		Description: `For an MCP host (an agent): run_code runs code in a fresh sandbox, or in a
session when given its session_id; create_session makes a session (state and
files kept across run_code calls), close_session ends it; exec_command runs a
shell command in a session (or starts it in the background), list_processes
and kill_process see and signal them; read_file, write_file and list_files
reach its /workspace, /tmp and /home/user; list_languages lists the presets.
A client's sessions end when it disconnects. Calls are capped by the --max-*
flags (docs/http.md: boxer mcp).`,
		OnUsageError: usageError,
		// An agent calls its tools one at a time: one pre-created sandbox
		// makes each call's wait a fraction of a cold start.
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "concurrency", Value: runtime.NumCPU(), Usage: "sandboxes running at once"},
			&cli.DurationFlag{Name: "max-timeout", Value: 5 * time.Minute, Usage: "largest timeout a call may ask"},
			&cli.StringFlag{Name: "max-memory", Value: "1GiB", Usage: "largest memory a call may ask"},
			&cli.StringFlag{Name: "audit-log", Usage: "append one JSON line per run and session event to `FILE`"},
		}, append(append(append(append(append(append(warmFlags(1), readyFlags()...), shimFlags()...), operatorNetFlags()...), operatorFileFlags()...), operatorSecretFlags()...), operatorSessionFlags()...)...),
		Action: func(c *cli.Context) error {
			longLivedGC()
			max := runner.Maxima{Timeout: c.Duration("max-timeout"), CPUs: float64(runtime.NumCPU()), Pids: 256, TmpBytes: 512 << 20, OutputLimit: 16 << 20}
			var err error
			if max.MemoryBytes, err = sizeFlag(c, "max-memory"); err != nil {
				return err
			}
			if max.NetBytes, err = sizeFlag(c, "max-net-bytes"); err != nil {
				return err
			}
			if max.ReturnBytes, err = sizeFlag(c, "max-return-bytes"); err != nil {
				return err
			}
			if max.AllowHosts, err = operatorAllowlist(c); err != nil {
				return err
			}
			if max.Preload, err = preloads(c, false); err != nil {
				return err
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
			// stdout carries the protocol: everything else goes to stderr.
			r, err := connect(c, os.Stderr, true, set.options, shims, ceilings)
			if err != nil {
				return err
			}
			defer r.Close()
			if err := startWarm(c, r, max); err != nil {
				return err
			}
			smax, err := sessionMaxima(c)
			if err != nil {
				return err
			}
			if smax.PerCaller == 0 {
				// An MCP server serves one client: all its sessions.
				smax.PerCaller = smax.Sessions
			}
			if err := startReady(c, r, max, smax, ""); err != nil {
				return err
			}
			var log *audit.Log
			if p := c.String("audit-log"); p != "" {
				f, err := openAuditLog(p)
				if err != nil {
					return err
				}
				defer f.Close()
				log = audit.New(f)
			}
			s, err := server.NewMCP(r, max, smax, c.Int("concurrency"), version, log)
			if err != nil {
				return fail("mcp: %v", err)
			}
			// The client's sessions end with it; idle ones before.
			defer func() {
				for _, e := range r.CloseSessions(context.Background(), "", reaper.EndDisconnect) {
					log.Write(server.EndedEntry(e))
				}
			}()
			stop := make(chan struct{})
			defer close(stop)
			go expireSessions(r, stop, log)
			if err := s.Run(c.Context, &server.StdioTransport{}); err != nil && c.Context.Err() == nil {
				return fail("mcp: %v", err)
			}
			return nil
		},
	}
}

// expireSessions ends idle and expired sessions every few seconds until
// stop is closed, and writes their lines to log.
func expireSessions(r *runner.Runner, stop <-chan struct{}, log *audit.Log) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for _, e := range r.ExpireSessions(context.Background()) {
				log.Write(server.EndedEntry(e))
			}
		}
	}
}
