package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/seccomp"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

// maxCode bounds code read from -f or stdin.
const maxCode = 16 << 20

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run code in a fresh sandbox",
		ArgsUsage: "[-- COMMAND [ARG...]]",
		Description: `Runs the code of -c, -f or stdin with a language preset (--lang), or a
command of an image after -- (--image), in a sandbox made for it and removed
after it. boxer exits with the program's exit code: 124 on --timeout, 137 when
out of --memory, 125 when boxer could not run it (one line on stderr says
why). --json prints the result object instead of the output.

  boxer run --lang python -c 'print(1)'
  boxer run --lang bash --timeout 5s --memory 64m -f script.sh
  boxer run --image boxer/python -- python3 -c 'print(2)'`,
		OnUsageError: usageError,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "lang", Aliases: []string{"l"}, Usage: "language preset: " + strings.Join(runner.PresetNames(), ", ")},
			&cli.StringFlag{Name: "code", Aliases: []string{"c"}, Usage: "the program's code"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the program's code from `FILE`"},
			&cli.StringFlag{Name: "image", Usage: "image `REF` (overrides the preset's)"},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "set `K=V` in the sandbox (repeatable)"},
			&cli.StringFlag{Name: "stdin-file", Usage: "feed `FILE` to the program's stdin (default: empty)"},
			&cli.StringFlag{Name: "copy-in", Usage: "copy host directory `DIR` into /workspace before the run"},
			&cli.StringFlag{Name: "copy-out", Usage: "copy /workspace to host directory `DIR` after the run"},
			&cli.DurationFlag{Name: "timeout", Value: runner.DefaultTimeout, Usage: "wall clock limit from start"},
			&cli.StringFlag{Name: "memory", Value: units.BytesSize(runner.DefaultMemory), Usage: "memory limit, no swap (256m, 1g, 512MiB)"},
			&cli.Float64Flag{Name: "cpus", Value: runner.DefaultCPUs, Usage: "CPU quota in cores"},
			&cli.Int64Flag{Name: "pids", Value: runner.DefaultPids, Usage: "process and thread cap"},
			&cli.StringFlag{Name: "tmp-size", Value: units.BytesSize(runner.DefaultTmpSize), Usage: "size of /tmp and of /workspace"},
			&cli.StringFlag{Name: "output-limit", Value: units.BytesSize(runner.DefaultOutputLimit), Usage: "bytes kept per stream; the rest is dropped"},
			&cli.StringFlag{Name: "network", Value: runner.DefaultNetwork, Usage: "network: " + strings.Join(runner.Networks(), ", ") + " (none: loopback only)"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "open egress to `HOST[:PORT]` only (repeatable; a DNS name, *.domain, an IP or a CIDR; PORT 443 unless given, or a list like 80,443)"},
			&cli.StringFlag{Name: "net-bytes", Value: units.BytesSize(runner.DefaultNetBytes), Usage: "with --allow-host: bytes in + out the run may move"},
			&cli.StringFlag{Name: "runtime", Value: runner.DefaultRuntime, Usage: "OCI runtime: " + strings.Join(runner.Runtimes(), " or ") + " (gVisor)"},
			&cli.StringFlag{Name: "user", Value: fmt.Sprintf("%d:%d", runner.DefaultUID, runner.DefaultGID), Usage: "`UID:GID` inside the sandbox"},
			&cli.StringFlag{Name: "seccomp-profile", Usage: "replace the default seccomp allowlist with an OCI or Docker JSON profile `FILE`"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON result object on stdout"},
			&cli.BoolFlag{Name: "no-standby", Usage: "neither take nor leave a standby sandbox (also " + standbyEnv + "=0)"},
			preloadFlag(),
			&cli.BoolFlag{Name: "no-preload", Usage: "take and leave only a standby whose interpreter has imported nothing (see --preload)"},
		}, runSecretFlags()...),
		Action: runAction,
	}
}

func runAction(c *cli.Context) error {
	if err := programHint(c); err != nil {
		return err
	}
	req, err := requestFromFlags(c)
	if err != nil {
		return requestError(err)
	}
	jsonOut := c.Bool("json")
	if !jsonOut {
		req.Stdout, req.Stderr = os.Stdout, os.Stderr
	}

	if p := c.String("stdin-file"); p != "" {
		f, err := os.Open(p)
		if err != nil {
			return fail("--stdin-file: %v", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || st.IsDir() {
			return fail("--stdin-file %s: not a readable file", p)
		}
		req.Stdin = f
	}
	// Secrets last: a secret manager is asked only for a request that
	// is otherwise good.
	set, err := loadSecrets(c)
	if err != nil {
		return err
	}
	if err := checkInjectHosts(set, req); err != nil {
		return err
	}
	req.Secrets = set.refs
	standby := standbyOn(c)
	r, err := connect(c, os.Stderr, true, set.options, func(o *runner.Options) { o.Standby, o.HandOff = standby, standby })
	if err != nil {
		if c.Context.Err() != nil {
			return &exitError{code: interruptedCode(), msg: "interrupted"}
		}
		return err
	}
	defer r.Close()
	res, err := r.Run(c.Context, req)
	if errors.Is(err, runner.ErrInterrupted) || err != nil && c.Context.Err() != nil {
		if jsonOut {
			printJSON(res)
		}
		if err != nil && err != runner.ErrInterrupted && !errors.Is(err, context.Canceled) {
			return &exitError{code: interruptedCode(), msg: "interrupted; " + err.Error()}
		}
		return &exitError{code: interruptedCode(), msg: "interrupted: sandbox " + res.ID + " removed"}
	}
	if jsonOut {
		printJSON(res)
	}
	if err != nil {
		return requestError(err)
	}
	if standby {
		leaveStandby(c, req, r)
	}
	if !jsonOut {
		noteResult(os.Stderr, res, req)
	}
	return &exitError{code: res.ExitCode}
}

// noteResult tells a terminal user what the exit code alone does not.
func noteResult(w io.Writer, res runner.Result, req runner.Request) {
	switch res.Status {
	case runner.StatusTimeout:
		fmt.Fprintf(w, "boxer: timed out after %s: sandbox killed\n", req.Timeout)
	case runner.StatusOOM:
		fmt.Fprintf(w, "boxer: out of memory (--memory %s): sandbox killed\n", units.BytesSize(float64(req.MemoryBytes)))
	case runner.StatusError:
		fmt.Fprintf(w, "boxer: %s\n", oneLine(res.Error))
	}
	if req.CopyOut != "" {
		noteCopied(w, res.FilesOut, "from /workspace to "+req.CopyOut, res.FilesSkipped, "over --tmp-size")
	}
	if n := res.Network; n != nil {
		noteNetwork(w, n)
	}
	if res.StdoutTruncated {
		fmt.Fprintf(w, "boxer: stdout truncated to %d bytes (--output-limit)\n", req.OutputLimit)
	}
	if res.StderrTruncated {
		fmt.Fprintf(w, "boxer: stderr truncated to %d bytes (--output-limit)\n", req.OutputLimit)
	}
}

// noteCopied says how many files (and bytes) were copied where, and how
// many were skipped, and why beyond symlinks and special files.
func noteCopied(w io.Writer, files []runner.File, where string, skipped int, over string) {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	fmt.Fprintf(w, "boxer: copied %s (%s) %s", count(int64(len(files)), "file"), count(total, "byte"), where)
	if skipped > 0 {
		fmt.Fprintf(w, "; skipped %d (symlinks, special files, %s)", skipped, over)
	}
	fmt.Fprintln(w)
}

// count writes n things: "1 file", "2 files".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// noteNetwork tells what a run with --allow-host did on the network, when
// something was refused or cut (a quiet run is not worth a line).
func noteNetwork(w io.Writer, n *egress.Report) {
	if n.QuotaExceeded {
		fmt.Fprintf(w, "boxer: network quota exceeded (--net-bytes): connections closed after %d bytes in, %d out\n", n.BytesIn, n.BytesOut)
	}
	for _, d := range n.Denied {
		fmt.Fprintf(w, "boxer: network: refused %s: %s\n", d.Destination, d.Reason)
	}
	if more := n.DeniedTotal - len(n.Denied); more > 0 {
		fmt.Fprintf(w, "boxer: network: %d more refused (--json lists the first %d)\n", more, len(n.Denied))
	}
}

func printJSON(res runner.Result) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(res)
}

// requestFromFlags reads the run flags into a request, normalized by the
// runner: every error is a *runner.FieldError, written with flag names by
// usageFailure.
func requestFromFlags(c *cli.Context) (runner.Request, error) {
	req, err := sandboxFromFlags(c)
	if err != nil {
		return req, err
	}
	if req.Code, err = codeFromFlags(c, req.Lang != ""); err != nil {
		return req, err
	}
	if req.NoPreload = c.Bool("no-preload"); !req.NoPreload {
		p, err := preloads(c, true)
		if err != nil {
			return req, err
		}
		req.Preload = p.For(req.Lang)
	}
	return req.Normalize()
}

// sandboxFromFlags reads the flags that shape a sandbox (all of run's but
// the code's), as run and 'session create' share them.
func sandboxFromFlags(c *cli.Context) (runner.Request, error) {
	req := runner.Request{
		Lang:       c.String("lang"),
		Image:      c.String("image"),
		Args:       c.Args().Slice(),
		Env:        c.StringSlice("env"),
		Timeout:    c.Duration("timeout"),
		CPUs:       c.Float64("cpus"),
		Pids:       c.Int64("pids"),
		Runtime:    c.String("runtime"),
		Network:    c.String("network"),
		AllowHosts: c.StringSlice("allow-host"),
		CopyIn:     c.String("copy-in"),
		CopyOut:    c.String("copy-out"),
	}
	// A flag given is checked as given: --cpus 0 is a mistake, not a
	// request for the default.
	for _, f := range []struct {
		field string
		v     float64
	}{{runner.FieldTimeout, float64(req.Timeout)}, {runner.FieldCPUs, req.CPUs}, {runner.FieldPids, float64(req.Pids)}} {
		if err := runner.CheckLimit(f.field, f.v); err != nil {
			return req, err
		}
	}
	var err error
	for _, s := range []struct {
		field string
		dst   *int64
	}{{runner.FieldMemory, &req.MemoryBytes}, {runner.FieldTmpSize, &req.TmpBytes}, {runner.FieldOutputLimit, &req.OutputLimit}, {runner.FieldNetBytes, &req.NetBytes}} {
		v := c.String(cliName(s.field))
		if v == "" {
			continue // not a flag of this command
		}
		if err := bareSize(cliName(s.field), v); err != nil {
			return req, err
		}
		if *s.dst, err = runner.ParseSizeLimit(s.field, v); err != nil {
			return req, err
		}
	}
	if req.UID, req.GID, err = runner.ParseUser(c.String("user")); err != nil {
		return req, err
	}
	req.UserSet = true
	if p := c.String("seccomp-profile"); p != "" {
		if req.Seccomp, err = seccomp.Load(p); err != nil {
			return req, fmt.Errorf("--seccomp-profile: %w", err)
		}
	}
	return req, nil
}

// codeFromFlags reads the program from -c, -f, or (fromStdin) stdin.
func codeFromFlags(c *cli.Context, fromStdin bool) ([]byte, error) {
	switch {
	case c.IsSet("code") && c.IsSet("file"):
		return nil, errors.New("give the code with -c or -f, not both")
	case c.IsSet("code"):
		return []byte(c.String("code")), nil
	case c.IsSet("file"):
		return readCode(c.String("file"))
	case fromStdin:
		if isTerminal(os.Stdin) {
			fmt.Fprintln(os.Stderr, "boxer: reading the program from stdin; end it with Ctrl-D (or give -c CODE or -f FILE)")
		}
		code, err := io.ReadAll(io.LimitReader(os.Stdin, maxCode+1))
		if err == nil && len(code) > maxCode {
			err = fmt.Errorf("code on stdin is larger than %d bytes", maxCode)
		}
		return code, err
	}
	return nil, nil
}

// programHint says what to type when run's arguments are code or a
// language, as a newcomer gives them: 'boxer run python -c CODE' or
// 'boxer run --lang python CODE'. Arguments are a command only for --image.
func programHint(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 || c.String("image") != "" {
		return nil
	}
	if lang := c.String("lang"); lang != "" {
		example := "print(1)"
		if len(args) == 1 {
			example = args[0]
		}
		return fail("with --lang the program is code, not an argument: give it with -c, -f FILE or on stdin, e.g. boxer run --lang %s -c %s", lang, shellQuote(example))
	}
	for _, p := range runner.Presets() {
		if args[0] == p.Name || len(p.Command) > 0 && args[0] == p.Command[0] {
			// run keeps its arguments' order (they may be an image's
			// command): 'python -c CODE' arrives as three arguments.
			code := "CODE"
			if c.IsSet("code") {
				code = shellQuote(c.String("code"))
			} else if len(args) > 2 && args[1] == "-c" {
				code = shellQuote(args[2])
			}
			return fail("%s is not a command here: name the language with --lang, e.g. boxer run --lang %s -c %s", args[0], p.Name, code)
		}
	}
	return nil
}

// shellQuote writes s as one word of a shell command line.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// flagName is the run flag for a request field.
func flagName(field string) string {
	switch field {
	case runner.FieldCode:
		return "-c"
	case runner.FieldCommand:
		return "a command after --"
	case runner.FieldFiles:
		return "files"
	case runner.FieldAllowHosts:
		return "--allow-host"
	case runner.FieldSecrets:
		return "--secret"
	case runner.FieldPreload:
		return "--preload"
	}
	return "--" + cliName(field)
}

// cliName is the name of the run flag for a limit's field.
func cliName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// requestError writes an error about a request in the CLI's terms.
func requestError(err error) error {
	var fe *runner.FieldError
	if errors.As(err, &fe) {
		return fail("%s", fe.Render(flagName))
	}
	if fault.Is(err) {
		return hostFault(err)
	}
	return fail("%v", err)
}

func readCode(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("-f %s: not a regular file", path)
	}
	if st.Size() > maxCode {
		return nil, fmt.Errorf("-f %s: larger than %d bytes", path, maxCode)
	}
	return io.ReadAll(f)
}
