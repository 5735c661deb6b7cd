//go:build boxer_cli

package main

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/urfave/cli/v2"
)

// make build builds boxer with the boxer_cli tag: without boxer serve and
// boxer mcp, and so without the server's packages (the HTTP API, MCP,
// E2B's API, Prometheus), whose package initialisation every CLI run
// would pay at its start (docs/bench/2026-11-27.md: Start time). Those two commands run
// boxer-server, the whole of boxer (built without the tag), in this
// process's place: the same arguments, environment and PID.

// serverName is the whole boxer's binary, beside boxer or in LibexecDir.
const serverName = "boxer-server"

func serveCommand() *cli.Command {
	return serverCommand("serve", "serve runs and sessions over HTTP: POST /v1/runs, /v1/sessions (their runs and files), GET /healthz, /metrics, /v1/openapi.json")
}

func mcpCommand() *cli.Command {
	return serverCommand("mcp", "speak the Model Context Protocol on stdio: tools that run code, and make and use sessions")
}

// serverCommand is a command that boxer-server runs: its flags, --help
// included, are boxer-server's to read. It acts in Before, which
// prepare leaves as it is (boxer-server checks for root itself).
func serverCommand(name, usage string) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, SkipFlagParsing: true, Before: execServer}
}

// execServer replaces this process with boxer-server, given the same
// arguments.
func execServer(*cli.Context) error {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, dir := range append(dirs, daemon.LibexecDir) {
		p := filepath.Join(dir, serverName)
		if err := syscall.Exec(p, append([]string{p}, os.Args[1:]...), os.Environ()); err != nil && !os.IsNotExist(err) {
			return fail("running %s: %v", p, err)
		}
	}
	return fail("%s not found beside boxer or in %s: run 'make install'", serverName, daemon.LibexecDir)
}
