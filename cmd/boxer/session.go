package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

// localCaller owns the sessions the CLI makes. The CLI, root on the host,
// may use every session; servers give each caller its own.
const localCaller = "local"

func sessionCommand() *cli.Command {
	return &cli.Command{
		Name:  "session",
		Usage: "sandboxes that live across calls: create, run code in, copy files in and out, list, remove, pause and resume",
		Description: `A session is a sandbox that stays up between calls, with a run's hardening and
limits. For python and python-data each call runs in the same interpreter
(variables and imports persist, like a notebook); for every language the files
in /workspace persist. It ends after --idle-timeout without a call, at its
--lifetime, or with 'boxer session rm'. Any boxer process on the host (and
'boxer serve') may use it, one call at a time.

  S=$(boxer session create --lang python)
  boxer session run $S -c 'x = 41'
  boxer session run $S -c 'print(x + 1)'
  boxer session cp data.csv $S:in/data.csv
  boxer session rm $S`,
		Subcommands: []*cli.Command{
			sessionCreateCommand(),
			sessionRunCommand(),
			sessionCpCommand(),
			sessionFilesCommand(),
			sessionLsCommand(),
			sessionRmCommand(),
			sessionPauseCommand(),
			sessionResumeCommand(),
			sessionCheckpointCommand(),
			sessionForkCommand(),
			sessionTimeoutCommand(),
			sessionStatsCommand(),
			sessionExecCommand(),
			sessionPsCommand(),
			sessionKillCommand(),
			sessionAttachCommand(),
			sessionStdinCommand(),
			sessionPortCommand(),
			sessionNetworkCommand(),
			sessionAllowCommand(),
		},
	}
}

// sessionCreateFlags are run's sandbox flags (secrets and injection
// included), without what only a run has (code, copy-out, --network), and
// the session's own.
func sessionCreateFlags() []cli.Flag {
	skip := []string{"code", "file", "stdin-file", "copy-out", "network", "json", "no-standby", "preload", "no-preload"}
	var flags []cli.Flag
	for _, f := range runCommand().Flags {
		name := f.Names()[0]
		if slices.Contains(skip, name) {
			continue
		}
		// run's words for a run; a session's are about its calls.
		switch f := f.(type) {
		case *cli.DurationFlag:
			if name == "timeout" {
				f.Usage = "each call's wall clock limit, unless the call gives its own"
			}
		case *cli.StringFlag:
			switch name {
			case "output-limit":
				f.Usage = "bytes kept per stream of each call, unless the call gives its own; the rest is dropped"
			case "copy-in":
				f.Usage = "copy host directory `DIR` into /workspace when the session starts"
			}
		}
		flags = append(flags, f)
	}
	return append(flags,
		&cli.DurationFlag{Name: "idle-timeout", Value: runner.DefaultSessionIdle, Usage: "end the session after this long without a call"},
		&cli.DurationFlag{Name: "lifetime", Value: runner.DefaultSessionLifetime, Usage: "end the session this long after it starts, whatever happens"},
		&cli.BoolFlag{Name: "json", Usage: "print the session as JSON"},
	)
}

func sessionCreateCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "make a session and print its ID (--timeout and --output-limit are each call's defaults)",
		Description: `Takes run's sandbox flags, but no code: code runs in the session with
'boxer session run ID'. --lang is required.`,
		OnUsageError: usageError,
		Flags:        sessionCreateFlags(),
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			// On the CLI the cap is boxer's own, not a server's.
			if l := c.Duration("lifetime"); l > runner.DefaultMaxSessionLifetime {
				most := shortDuration(runner.DefaultMaxSessionLifetime)
				return fail("--lifetime %s is longer than a session may live (%s): give at most --lifetime %s", shortDuration(l), most, most)
			}
			req, err := sandboxFromFlags(c)
			if err != nil {
				return requestError(err)
			}
			// Secrets last, as for a run: the values go to the session's
			// keeper, which holds them for the session's life.
			set, err := loadSecrets(c)
			if err != nil {
				return err
			}
			if err := checkInjectHosts(set, req); err != nil {
				return err
			}
			req.Secrets = set.refs
			r, err := connect(c, os.Stderr, true, set.options)
			if err != nil {
				return err
			}
			defer r.Close()
			s, err := r.CreateSession(c.Context, runner.SessionRequest{
				Request: req, Idle: c.Duration("idle-timeout"), Lifetime: c.Duration("lifetime"), Caller: localCaller,
			}, runner.Maxima{AllowHosts: req.AllowHosts}, runner.SessionMaxima{})
			if err != nil {
				return requestError(err)
			}
			if c.Bool("json") {
				return json.NewEncoder(os.Stdout).Encode(s)
			}
			fmt.Println(s.ID)
			return nil
		},
	}
}

func sessionRunCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run code in a session: its interpreter keeps state between calls (python, python-data), its /workspace keeps files",
		Description: `The code comes from -c, -f or stdin. The output is printed as it comes, and
boxer exits with the call's exit code; --json prints the result object.`,
		ArgsUsage:    "ID",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "code", Aliases: []string{"c"}, Usage: "the call's code"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the call's code from `FILE`"},
			&cli.StringFlag{Name: "stdin-file", Usage: "feed `FILE` to the call's stdin (default: empty)"},
			&cli.DurationFlag{Name: "timeout", Usage: "this call's wall clock limit, e.g. 30s", DefaultText: "the session's"},
			&cli.StringFlag{Name: "output-limit", Usage: "bytes kept per stream for this call, e.g. 1m", DefaultText: "the session's"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON result object on stdout"},
		},
		Action: sessionRunAction,
	}
}

func sessionRunAction(c *cli.Context) error {
	id, err := oneArg(c, "ID")
	if err != nil {
		return err
	}
	call := runner.SessionCall{Timeout: c.Duration("timeout")}
	if call.Timeout < 0 {
		return requestError(runner.CheckLimit(runner.FieldTimeout, float64(call.Timeout)))
	}
	if v := c.String("output-limit"); v != "" {
		if call.OutputLimit, err = runner.ParseSizeLimit(runner.FieldOutputLimit, v); err != nil {
			return requestError(err)
		}
	}
	if call.Code, err = codeFromFlags(c, true); err != nil {
		return fail("%v", err)
	}
	if p := c.String("stdin-file"); p != "" {
		f, err := os.Open(p)
		if err != nil {
			return fail("--stdin-file: %v", err)
		}
		defer f.Close()
		call.Stdin = f
	}
	jsonOut := c.Bool("json")
	if !jsonOut {
		call.Stdout, call.Stderr = os.Stdout, os.Stderr
	}
	r, err := connect(c, os.Stderr, true)
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := r.RunInSession(c.Context, id, "", call, runner.Maxima{})
	if jsonOut && (err == nil || errors.Is(err, runner.ErrInterrupted)) {
		printJSON(res)
	}
	switch {
	case errors.Is(err, runner.ErrInterrupted):
		return &exitError{code: interruptedCode(), msg: "interrupted"}
	case errors.Is(err, runner.ErrSessionNotFound):
		return fail("%v", sessionError(id, err))
	case err != nil:
		return requestError(err)
	}
	if !jsonOut {
		switch res.Status {
		case runner.StatusTimeout:
			fmt.Fprintf(os.Stderr, "boxer: the call timed out: interrupted\n")
		case runner.StatusOOM:
			fmt.Fprintf(os.Stderr, "boxer: out of memory: the session's memory limit was reached\n")
		}
		if res.SessionEnded != "" {
			fmt.Fprintf(os.Stderr, "boxer: session %s ended: %s\n", id, runner.EndText(res.SessionEnded))
		}
	}
	return &exitError{code: res.ExitCode}
}

// sessionError says that a session is not there in the CLI's words.
func sessionError(id string, err error) error {
	var ended *runner.SessionEndedError
	if errors.As(err, &ended) {
		return err
	}
	return fmt.Errorf("no session %s: see 'boxer session ls'", id)
}

func sessionCpCommand() *cli.Command {
	return &cli.Command{
		Name:         "cp",
		Usage:        "copy a file or directory into a session's /workspace (ID:PATH as the destination) or out of it (ID:PATH as the source)",
		ArgsUsage:    "SRC DST",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fail("session cp needs SRC and DST, one of them ID:PATH (see 'boxer session cp --help')")
			}
			src, dst := c.Args().Get(0), c.Args().Get(1)
			srcID, srcPath, srcIn := sessionPath(src)
			dstID, dstPath, dstIn := sessionPath(dst)
			if srcIn == dstIn {
				return fail("session cp needs exactly one of SRC and DST as ID:PATH, like bxs-0123456789abcdef:data.csv")
			}
			if dstIn {
				if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
					return fail("%s: no such file or directory on this host: SRC is the host file or directory to copy into the session", src)
				}
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			if dstIn {
				switch err := r.CopyToSession(c.Context, dstID, src, dstPath); {
				case errors.Is(err, runner.ErrSessionNotFound):
					return fail("%v", sessionError(dstID, err))
				case err != nil:
					return cpError(err)
				}
				return nil
			}
			files, skipped, err := r.CopyFromSession(c.Context, srcID, srcPath, dst)
			switch {
			case errors.Is(err, runner.ErrFileNotFound):
				return fail("%s: no such file or directory in session %s", srcPath, srcID)
			case errors.Is(err, runner.ErrSessionNotFound):
				return fail("%v", sessionError(srcID, err))
			case err != nil:
				return requestError(err)
			}
			noteCopied(os.Stderr, files, "to "+dst, skipped, "over the workspace's size")
			return nil
		},
	}
}

// shortDuration writes d as a flag takes it: 48h, not 48h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// cpError writes a copy's error in cp's own words: the host side is SRC,
// not run's --copy-in.
func cpError(err error) error {
	var fe *runner.FieldError
	if errors.As(err, &fe) && fe.Field == runner.FieldCopyIn {
		return fail("SRC %s", fe.Text(flagName))
	}
	return requestError(err)
}

// sessionPath splits ID:PATH; in is false for a host path. A bare "ID:"
// is the workspace itself.
func sessionPath(arg string) (id, p string, in bool) {
	id, p, ok := strings.Cut(arg, ":")
	if !ok || !strings.HasPrefix(id, "bxs-") || strings.Contains(id, "/") {
		return "", arg, false
	}
	p = strings.TrimPrefix(p, "/workspace")
	p = strings.Trim(p, "/")
	if p == "" {
		p = "."
	}
	return id, p, true
}

func sessionLsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list the live sessions: ID, language, runtime, age, idle time, time left",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
		Action: func(c *cli.Context) error {
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			list, err := r.Sessions(c.Context, "")
			if err != nil {
				return fail("%v", err)
			}
			if c.Bool("json") {
				return json.NewEncoder(os.Stdout).Encode(list)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tLANG\tRUNTIME\tCREATED\tIDLE FOR\tEXPIRES IN")
			now := time.Now()
			for _, s := range list {
				idle := units.HumanDuration(now.Sub(s.LastUsed))
				if s.Checkpointed {
					idle = "checkpointed"
				} else if s.Paused {
					idle = "paused"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s ago\t%s\t%s\n", s.ID, s.Lang, s.Runtime,
					units.HumanDuration(now.Sub(s.CreatedAt)), idle, units.HumanDuration(s.ExpiresAt.Sub(now)))
			}
			return w.Flush()
		},
	}
}

func sessionRmCommand() *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "end sessions and remove everything they were",
		ArgsUsage: "ID...",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fail("session rm needs at least one session ID (see 'boxer session ls')")
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			var errs []string
			for _, id := range c.Args().Slice() {
				if err := r.RemoveSession(c.Context, id, ""); err != nil {
					errs = append(errs, sessionError(id, err).Error())
				}
			}
			if len(errs) > 0 {
				return fail("%s", strings.Join(errs, "; "))
			}
			return nil
		},
	}
}

// noArgs refuses words after 'session create': its sandbox is shaped by
// flags, and a language named bare is the likeliest slip.
func noArgs(c *cli.Context) error {
	if c.NArg() == 0 {
		return nil
	}
	first := c.Args().First()
	if _, err := runner.LookupPreset(first); err == nil {
		return fail("%s takes no arguments: use --lang %s", subcommand(c), first)
	}
	return fail("%s takes no arguments, only flags, e.g. --lang python (see '%s --help')", subcommand(c), commandPath(c))
}

// oneArg is a command's single argument.
func oneArg(c *cli.Context, name string) (string, error) {
	if c.NArg() != 1 {
		return "", fail("%s needs one argument, %s (see '%s --help')", subcommand(c), name, commandPath(c))
	}
	return c.Args().First(), nil
}

// operatorSessionFlags are serve's and mcp's caps on sessions, and on
// what one caller holds at once.
func operatorSessionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-sessions", Value: runner.DefaultMaxSessions, Usage: "sessions alive at once (429 beyond)"},
		&cli.IntFlag{Name: "max-sessions-per-caller", Usage: "sessions one caller holds at once (429 beyond; 0: a quarter of --max-sessions, at least 1)"},
		&cli.DurationFlag{Name: "max-session-idle", Value: time.Hour, Usage: "largest idle_timeout a session may ask"},
		&cli.DurationFlag{Name: "max-session-lifetime", Value: 24 * time.Hour, Usage: "largest lifetime a session may ask"},
		&cli.IntFlag{Name: "max-watches-per-caller", Value: runner.DefaultWatchesPerCaller, Usage: "directory watches one caller holds at once (429 beyond)"},
		&cli.IntFlag{Name: "max-watches", Usage: "directory watches of all callers at once (429 beyond; 0 and at most: half of fs.inotify.max_user_instances)"},
		&cli.IntFlag{Name: "max-streams-per-caller", Value: runner.DefaultStreamsPerCaller, Usage: "streams one caller holds open at once: run, exec and process output, watches (429 beyond)"},
		&cli.IntFlag{Name: "max-processes-per-caller", Value: runner.DefaultProcessesPerCaller, Usage: "background processes running and calls in flight of one caller (429 beyond)"},
	}
}

// sessionMaxima reads operatorSessionFlags' caps on sessions.
func sessionMaxima(c *cli.Context) (runner.SessionMaxima, error) {
	m := runner.SessionMaxima{Idle: c.Duration("max-session-idle"), Lifetime: c.Duration("max-session-lifetime"), Sessions: c.Int("max-sessions"), PerCaller: c.Int("max-sessions-per-caller")}
	if m.Sessions < 1 || m.Idle < time.Second || m.Lifetime < time.Second {
		return m, fail("--max-sessions must be at least 1, --max-session-idle and --max-session-lifetime at least 1s")
	}
	if m.PerCaller < 0 {
		return m, fail("--max-sessions-per-caller must be 0 (a quarter of --max-sessions) or more, not %d", m.PerCaller)
	}
	return m, nil
}

// ceilingOptions reads operatorSessionFlags' caps on what one caller
// holds, for the runner.
func ceilingOptions(c *cli.Context) (func(*runner.Options), error) {
	cl := runner.Ceilings{
		WatchesPerCaller:   c.Int("max-watches-per-caller"),
		Watches:            c.Int("max-watches"),
		StreamsPerCaller:   c.Int("max-streams-per-caller"),
		ProcessesPerCaller: c.Int("max-processes-per-caller"),
	}
	if cl.WatchesPerCaller < 1 || cl.StreamsPerCaller < 1 || cl.ProcessesPerCaller < 1 || cl.Watches < 0 {
		return nil, fail("--max-watches-per-caller, --max-streams-per-caller and --max-processes-per-caller must be at least 1, --max-watches 0 (half of the kernel's inotify instances) or more")
	}
	return func(o *runner.Options) { o.Ceilings = cl }, nil
}
