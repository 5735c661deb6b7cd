// Command boxer runs untrusted code in a fresh, hardened sandbox on containerd.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/boxer-dev/boxer/cmd/boxer/imagecmd"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/runner"
	"github.com/containerd/log"
	"github.com/urfave/cli/v2"
)

// version is set by the Makefile.
var version = "dev"

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	shortLivedGC()
	// SIGINT, SIGTERM and SIGHUP cancel the command's context: a run removes its
	// sandbox before boxer exits. Later signals are swallowed so that the
	// removal is not cut short.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// A closed stdout (boxer run ... | head -1) must not kill boxer before it
	// removes the sandbox: with SIGPIPE caught, writes fail with EPIPE
	// instead. Caught, not ignored, so that children get the default back.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		s := <-sigs
		caught.Store(s.(syscall.Signal))
		cancel()
	}()
	app := newApp()
	err := app.RunContext(ctx, flagsFirst(app, args))
	if err == nil {
		return 0
	}
	var f *fault.Error
	if errors.As(err, &f) && f.Err != nil {
		log.L.WithError(f.Err).Debug("host fault")
	}
	var ee *exitError
	if errors.As(err, &ee) {
		switch {
		case ee.bare:
			fmt.Fprintln(os.Stderr, oneLine(ee.msg))
		case ee.msg != "":
			fmt.Fprintln(os.Stderr, "boxer: "+oneLine(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "boxer: "+oneLine(err.Error()))
	return runner.ExitBoxer
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "boxer",
		Usage: "run untrusted code in a fresh, hardened sandbox on containerd",
		Description: `Each program runs in a sandbox of its own (runc, or gVisor with --runtime runsc):
no network unless --allow-host opens it, no capabilities, a seccomp allowlist,
a read-only root, and memory, CPU, process, disk and time limits. Four ways in:

  boxer run            one program, one fresh sandbox, removed after it
  boxer session        a sandbox that lives across calls, its state and files kept
  boxer serve          the same over HTTP: runs (POST /v1/runs) and sessions (/v1/sessions)
  boxer mcp            the same as MCP tools on stdio: run_code, list_languages,
                       create_session, close_session, exec_command,
                       list_processes, kill_process, read_file, write_file,
                       list_files

boxer must run as root. First 'sudo boxer setup' (containerd and the images),
then 'sudo boxer run --lang python -c "print(1)"'. 'boxer doctor' checks the host.
'boxer COMMAND --help' tells more; docs/reference.md and docs/http.md tell all.`,
		Version:                   version,
		HideHelpCommand:           true,
		DisableSliceFlagSeparator: true,
		OnUsageError:              usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "address", Usage: "containerd socket (default: the system socket if it answers, else boxer's private containerd)", EnvVars: []string{"BOXER_ADDRESS"}},
			&cli.StringFlag{Name: "namespace", Value: "boxer", Usage: "containerd namespace for boxer's objects", EnvVars: []string{"BOXER_NAMESPACE"}},
			&cli.BoolFlag{Name: "debug", Usage: "log containerd client details to stderr"},
			&cli.StringFlag{Name: "net-range", Value: egress.DefaultRange, Usage: "IPv4 `CIDR` the links of sandboxes with --allow-host are addressed from (a /30 each)", EnvVars: []string{"BOXER_NET_RANGE"}},
			&cli.StringFlag{Name: "dns-upstream", Usage: "resolver `HOST:PORT` boxer asks about allowed names (default: the host's first nameserver)", EnvVars: []string{"BOXER_DNS_UPSTREAM"}},
			&cli.BoolFlag{Name: "allow-no-sni", Usage: "let TLS without a server name (SNI), and plain HTTP without a Host name, reach addresses that only a name in --allow-host allows", EnvVars: []string{"BOXER_ALLOW_NO_SNI"}},
			&cli.StringFlag{Name: "egress-netns", Usage: "network namespace `PATH` (e.g. /run/netns/egress) that sandboxes' allowed connections and DNS queries leave from (default: the host's)", EnvVars: []string{"BOXER_EGRESS_NETNS"}},
			usernsFlag(),
			usernsRangeFlag(),
		},
		Before: func(c *cli.Context) error {
			if c.Bool("debug") {
				_ = log.SetLevel("debug")
			} else {
				// containerd's client logs warnings of its own; boxer reports what matters.
				_ = log.SetLevel("error")
			}
			return nil
		},
		Commands: []*cli.Command{
			runCommand(),
			sessionCommand(),
			setupCommand(),
			doctorCommand(),
			imagecmd.Command(images),
			containerdCommand(),
			serveCommand(),
			mcpCommand(),
			standbyCommand(),
			keeperCommand(),
		},
		Action: unknownCommand,
	}
	prepare(app.Commands)
	return app
}

// prepare gives every command boxer's usage errors, every command with
// subcommands a word for one it lacks, and every command that acts the
// root check (doctor checks for root itself).
func prepare(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
		// 'boxer image help' would only say what --help says.
		c.HideHelpCommand = true
		switch {
		case len(c.Subcommands) > 0:
			if c.Action == nil {
				c.Action = unknownCommand
			}
			prepare(c.Subcommands)
		case c.Action != nil && c.Name != "doctor":
			c.Action = asRoot(c.Action)
		}
	}
}

// caught is the first SIGINT or SIGTERM boxer received.
var caught atomic.Value

// interruptedCode is the shell's exit code for the caught signal: 130, 143 or 129.
func interruptedCode() int {
	if s, ok := caught.Load().(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// commandPath is the command c runs, as typed: "boxer session create".
// (Command.FullName lacks the parent commands when a subcommand's flags
// fail to parse.)
func commandPath(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" {
			names = append([]string{l.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// subcommand is the command c runs, without "boxer": "session create".
func subcommand(c *cli.Context) string {
	return strings.TrimPrefix(commandPath(c), c.App.Name+" ")
}

// exitError carries an exit code and an optional one-line message to main,
// and the error it says, if any.
type exitError struct {
	code int
	msg  string
	err  error
	// bare: msg is the whole line, without "boxer: " before it.
	bare bool
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.err }

// hostFault is exit 125 with a host fault's one line; --debug logs the
// errors under it.
func hostFault(err error) error {
	return &exitError{code: runner.ExitBoxer, msg: err.Error(), err: err}
}

func fail(format string, args ...any) error {
	return &exitError{code: runner.ExitBoxer, msg: fmt.Sprintf(format, args...)}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// connect returns a Runner on the containerd the global flags select.
// Commands that make sandboxes reap the leftovers of dead boxer processes.
func connect(c *cli.Context, progress io.Writer, reap bool, more ...func(*runner.Options)) (*runner.Runner, error) {
	o := runner.Options{
		Address:   c.String("address"),
		Namespace: c.String("namespace"),
		Daemon:    daemon.FromEnv(),
		Progress:  progress,
		Reap:      reap,
		Egress: runner.EgressOptions{
			Range:       c.String("net-range"),
			UpstreamDNS: c.String("dns-upstream"),
			Netns:       c.String("egress-netns"),
			AllowNoSNI:  c.Bool("allow-no-sni"),
		},
	}
	if self, err := os.Executable(); err == nil {
		o.Keeper = keeperArgs(c, self)
	}
	var err error
	if o.Userns, err = usernsOptions(c); err != nil {
		return nil, err
	}
	for _, f := range more {
		f(&o)
	}
	r, err := runner.New(c.Context, o)
	if fault.Is(err) {
		return nil, hostFault(err)
	}
	if err != nil {
		return nil, fail("cannot reach containerd: %v (check 'boxer doctor')", err)
	}
	return r, nil
}
