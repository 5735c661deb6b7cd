package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/containerd/log"
	"github.com/urfave/cli/v2"
)

// A session's processes from the CLI: exec, ps, kill, attach, stdin
// (docs/sessions.md, "Processes").

func sessionExecCommand() *cli.Command {
	return &cli.Command{
		Name:  "exec",
		Usage: "run a command in a session, in the foreground or in the background (--bg)",
		Description: `The command runs as the sandbox's user, with the session's limits, found on
its PATH (no shell unless you name one: boxer session exec $S -- sh -c 'cmd').
In the foreground its output comes as it is written, stdin is passed on, and
boxer exits with its exit code; --tty runs it on a terminal (interactive
programs, 'bash -i'). With --bg boxer prints its number and PID and returns:
'boxer session attach' follows its output later, 'boxer session kill' ends it.`,
		ArgsUsage:    "ID [--] COMMAND [ARG...]",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "bg", Aliases: []string{"d"}, Usage: "start it in the background and print its number"},
			&cli.StringFlag{Name: "tag", Usage: "name it, for ps, attach and kill"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "run it on a terminal of the caller's size"},
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "keep a background process's stdin open for 'boxer session stdin'"},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "set `NAME=value` for it (repeatable)"},
			&cli.StringFlag{Name: "cwd", Aliases: []string{"w"}, Usage: "start it in `DIR`", DefaultText: "/workspace"},
			&cli.BoolFlag{Name: "json", Usage: "print the process as JSON (with --bg)"},
		},
		Action: sessionExecAction,
	}
}

func sessionExecAction(c *cli.Context) error {
	if c.NArg() < 2 {
		return fail("session exec needs a session ID and a command (see '%s --help')", commandPath(c))
	}
	id, args := c.Args().First(), c.Args().Slice()[1:]
	if args[0] == "--" {
		args = args[1:]
	}
	req := runner.ProcessRequest{
		Args: args, Env: c.StringSlice("env"), Cwd: c.String("cwd"), Tag: c.String("tag"),
		Stdin: !c.Bool("bg") || c.Bool("stdin"),
	}
	tty := c.Bool("tty")
	if tty {
		req.PTY = &runner.TermSize{Cols: 80, Rows: 24}
		if w, h, ok := termSize(os.Stdin); ok {
			req.PTY = &runner.TermSize{Cols: w, Rows: h}
		}
	}
	r, err := connect(c, os.Stderr, true)
	if err != nil {
		return err
	}
	defer r.Close()
	if c.Bool("bg") {
		info, err := r.StartProcess(c.Context, id, "", req)
		if err != nil {
			return processError(id, err)
		}
		if c.Bool("json") {
			return json.NewEncoder(os.Stdout).Encode(info)
		}
		fmt.Printf("%d\t%d\n", info.ID, info.PID)
		return nil
	}
	// Started and followed in one request to the session's keeper; what
	// needs the process's number starts once it runs.
	started, done := make(chan string, 1), make(chan struct{})
	defer close(done)
	restore := func() {}
	defer func() { restore() }()
	// boxer's own SIGINT or SIGTERM goes to the process, which then ends
	// as it chooses; boxer follows it to its end.
	go func() {
		var ref string
		select {
		case ref = <-started:
		case <-done:
			return
		}
		select {
		case <-c.Context.Done():
		case <-done:
			return
		}
		sig, _ := caught.Load().(syscall.Signal)
		if sig == 0 {
			sig = syscall.SIGINT
		}
		_ = r.SignalProcess(context.Background(), id, "", ref, sig)
	}()
	onStart := func(info runner.ProcessInfo) {
		ref := fmt.Sprint(info.ID)
		started <- ref
		if tty && isTerminal(os.Stdin) {
			if undo, err := rawTerminal(os.Stdin); err == nil {
				restore = undo
			}
			go followResize(c.Context, r, id, ref)
		}
		// Stdin goes on as it comes, and ends the process's at its end; a
		// terminal stays open, as it would for a program whose typist
		// stopped.
		go func() {
			if err := r.SendStdin(context.WithoutCancel(c.Context), id, "", ref, os.Stdin, !tty); err != nil {
				log.L.WithError(err).Debug("sending stdin")
			}
		}()
	}
	var end *runner.ProcessInfo
	err = r.RunProcess(context.WithoutCancel(c.Context), id, "", req, func(ev runner.ProcessEvent) error {
		if ev.Start != nil {
			onStart(*ev.Start)
		}
		end = printEvent(ev, end)
		return nil
	})
	if err != nil {
		return processError(id, err)
	}
	return &exitError{code: exitOf(end)}
}

// follow writes process ref's output to stdout and stderr until its end,
// which it returns.
func follow(ctx context.Context, r *runner.Runner, id, ref string) (*runner.ProcessInfo, error) {
	var end *runner.ProcessInfo
	err := r.AttachProcess(ctx, id, "", ref, 0, func(ev runner.ProcessEvent) error {
		end = printEvent(ev, end)
		return nil
	})
	return end, err
}

// printEvent writes a process's event to stdout or stderr and returns
// its end, if the event is its end, or else end.
func printEvent(ev runner.ProcessEvent, end *runner.ProcessInfo) *runner.ProcessInfo {
	switch {
	case ev.Dropped > 0:
		fmt.Fprintf(os.Stderr, "boxer: %d bytes of earlier output are gone (the session keeps the last %d)\n", ev.Dropped, runner.DefaultRingBytes)
	case ev.Stream == runner.StreamStderr:
		_, _ = os.Stderr.Write(ev.Data)
	case ev.Stream != "":
		_, _ = os.Stdout.Write(ev.Data)
	case ev.End != nil:
		return ev.End
	}
	return end
}

func exitOf(p *runner.ProcessInfo) int {
	if p == nil || p.ExitCode == nil {
		return runner.ExitBoxer
	}
	return *p.ExitCode
}

func followResize(ctx context.Context, r *runner.Runner, id, ref string) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		select {
		case <-winch:
			if w, h, ok := termSize(os.Stdin); ok {
				_ = r.ResizeProcess(context.WithoutCancel(ctx), id, "", ref, runner.TermSize{Cols: w, Rows: h})
			}
		case <-ctx.Done():
			return
		}
	}
}

// processError says a process's failure in the CLI's words.
func processError(id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runner.ErrSessionNotFound):
		return fail("%v", sessionError(id, err))
	case errors.Is(err, runner.ErrProcessNotFound):
		return fail("no such process in session %s: see 'boxer session ps %s'", id, id)
	}
	return requestError(err)
}

// withSession is the action of a command that takes one session ID: f
// gets a Runner on the global flags' containerd.
func withSession(f func(c *cli.Context, r *runner.Runner, id string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		id, err := oneArg(c, "ID")
		if err != nil {
			return err
		}
		r, err := connect(c, os.Stderr, true)
		if err != nil {
			return err
		}
		defer r.Close()
		return f(c, r, id)
	}
}

func sessionPsCommand() *cli.Command {
	return &cli.Command{
		Name:         "ps",
		Usage:        "list a session's processes, running and ended",
		ArgsUsage:    "ID",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
		Action: withSession(func(c *cli.Context, r *runner.Runner, id string) error {
			ps, err := r.Processes(c.Context, id, "")
			if err != nil {
				return processError(id, err)
			}
			if c.Bool("json") {
				return json.NewEncoder(os.Stdout).Encode(ps)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "N\tPID\tTAG\tSTATUS\tSTARTED\tCOMMAND")
			for _, p := range ps {
				status := "running"
				if !p.Running {
					status = fmt.Sprintf("exited %d", exitOf(&p))
				}
				fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s ago\t%s\n", p.ID, p.PID, p.Tag, status, time.Since(p.Started).Round(time.Second), strings.Join(p.Args, " "))
			}
			return w.Flush()
		}),
	}
}

func sessionKillCommand() *cli.Command {
	return &cli.Command{
		Name:  "kill",
		Usage: "send a signal to a session's process (by number or tag): TERM by default",
		Description: `KILL ends the process and everything it started; any other signal goes
to the process, which may handle it.`,
		ArgsUsage:    "ID PROCESS",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Value: "TERM", Usage: "the signal, by name or number"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fail("session kill needs a session ID and a process number or tag (see '%s --help')", commandPath(c))
			}
			sig, err := runner.ParseSignal(c.String("signal"))
			if err != nil {
				return requestError(err)
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			id := c.Args().First()
			return processError(id, r.SignalProcess(c.Context, id, "", c.Args().Get(1), sig))
		},
	}
}

func sessionAttachCommand() *cli.Command {
	return &cli.Command{
		Name:  "attach",
		Usage: "follow a session's process: what it wrote since it started (the last MiB), then live, to its end",
		Description: `boxer exits with the process's exit code once it ends; Ctrl-C leaves it
running.`,
		ArgsUsage:    "ID PROCESS",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fail("session attach needs a session ID and a process number or tag (see '%s --help')", commandPath(c))
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			id := c.Args().First()
			end, err := follow(c.Context, r, id, c.Args().Get(1))
			switch {
			case c.Context.Err() != nil:
				return &exitError{code: interruptedCode(), msg: "detached: the process goes on"}
			case err != nil:
				return processError(id, err)
			}
			return &exitError{code: exitOf(end)}
		},
	}
}

func sessionStdinCommand() *cli.Command {
	return &cli.Command{
		Name:         "stdin",
		Usage:        "send boxer's stdin to a session's process (started with --stdin), then close its stdin",
		ArgsUsage:    "ID PROCESS",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "keep-open", Usage: "leave its stdin open after"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fail("session stdin needs a session ID and a process number or tag (see '%s --help')", commandPath(c))
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			id := c.Args().First()
			var in io.Reader = os.Stdin
			return processError(id, r.SendStdin(c.Context, id, "", c.Args().Get(1), in, !c.Bool("keep-open")))
		},
	}
}
