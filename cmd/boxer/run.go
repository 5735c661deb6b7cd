package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/seccomp"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// maxCode bounds code read from -f or stdin.
const maxCode = 16 << 20

func runCommand() *cli.Command {
	return &cli.Command{
		Name:         "run",
		Usage:        "run code in a fresh sandbox",
		ArgsUsage:    "[-- COMMAND [ARG...]]",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "lang", Aliases: []string{"l"}, Usage: "language preset: " + strings.Join(runner.PresetNames(), ", ")},
			&cli.StringFlag{Name: "code", Aliases: []string{"c"}, Usage: "the program's code"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the program's code from `FILE`"},
			&cli.StringFlag{Name: "image", Usage: "image `REF` (overrides the preset's)"},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "set `K=V` in the sandbox (repeatable)"},
			&cli.StringFlag{Name: "stdin-file", Usage: "feed `FILE` to the program's stdin (default: empty)"},
			&cli.StringFlag{Name: "copy-in", Usage: "copy host directory `DIR` into /workspace before the run"},
			&cli.StringFlag{Name: "copy-out", Usage: "copy /workspace to host directory `DIR` after the run"},
			&cli.DurationFlag{Name: "timeout", Value: runner.DefaultTimeout, Usage: "wall clock limit from start"},
			&cli.StringFlag{Name: "memory", Value: "256MiB", Usage: "memory limit, no swap (256m, 1g, 512MiB)"},
			&cli.Float64Flag{Name: "cpus", Value: runner.DefaultCPUs, Usage: "CPU quota in cores"},
			&cli.Int64Flag{Name: "pids", Value: runner.DefaultPids, Usage: "process and thread cap"},
			&cli.StringFlag{Name: "tmp-size", Value: "64MiB", Usage: "size of /tmp and of /workspace"},
			&cli.StringFlag{Name: "output-limit", Value: "1MiB", Usage: "bytes kept per stream; the rest is dropped"},
			&cli.StringFlag{Name: "network", Value: runner.DefaultNetwork, Usage: "network: none (loopback only)"},
			&cli.StringFlag{Name: "runtime", Value: runner.DefaultRuntime, Usage: "OCI runtime: runc"},
			&cli.StringFlag{Name: "user", Value: "65534:65534", Usage: "`UID:GID` inside the sandbox"},
			&cli.StringFlag{Name: "seccomp-profile", Usage: "replace the default seccomp allowlist with an OCI or Docker JSON profile `FILE`"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON result object on stdout"},
		},
		Action: runAction,
	}
}

func runAction(c *cli.Context) error {
	req, err := requestFromFlags(c)
	if err != nil {
		return fail("%v", err)
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
	r, err := connect(c, os.Stderr)
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
		return fail("%v", err)
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
		var total int64
		for _, f := range res.FilesOut {
			total += f.Size
		}
		fmt.Fprintf(w, "boxer: copied %d files (%d bytes) from /workspace to %s", len(res.FilesOut), total, req.CopyOut)
		if res.FilesSkipped > 0 {
			fmt.Fprintf(w, "; skipped %d (symlinks, special files, over --tmp-size)", res.FilesSkipped)
		}
		fmt.Fprintln(w)
	}
	if res.StdoutTruncated {
		fmt.Fprintf(w, "boxer: stdout truncated to %d bytes (--output-limit)\n", req.OutputLimit)
	}
	if res.StderrTruncated {
		fmt.Fprintf(w, "boxer: stderr truncated to %d bytes (--output-limit)\n", req.OutputLimit)
	}
}

func printJSON(res runner.Result) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(res)
}

func requestFromFlags(c *cli.Context) (runner.Request, error) {
	req := runner.Request{
		Lang:    c.String("lang"),
		Image:   c.String("image"),
		Args:    c.Args().Slice(),
		Env:     c.StringSlice("env"),
		Timeout: c.Duration("timeout"),
		CPUs:    c.Float64("cpus"),
		Pids:    c.Int64("pids"),
		Runtime: c.String("runtime"),
		Network: c.String("network"),
		CopyIn:  c.String("copy-in"),
		CopyOut: c.String("copy-out"),
	}
	if req.Timeout <= 0 {
		return req, errors.New("--timeout must be positive, e.g. 30s")
	}
	if req.CPUs <= 0 || req.Pids <= 0 {
		return req, errors.New("--cpus and --pids must be larger than 0")
	}
	var err error
	for _, s := range []struct {
		flag string
		dst  *int64
	}{{"memory", &req.MemoryBytes}, {"tmp-size", &req.TmpBytes}, {"output-limit", &req.OutputLimit}} {
		if *s.dst, err = runner.ParseSize(c.String(s.flag)); err != nil {
			return req, fmt.Errorf("--%s: %v", s.flag, err)
		}
	}
	if req.MemoryBytes == 0 || req.TmpBytes == 0 || req.OutputLimit == 0 {
		return req, errors.New("--memory, --tmp-size and --output-limit must be larger than 0")
	}
	if req.UID, req.GID, err = runner.ParseUser(c.String("user")); err != nil {
		return req, fmt.Errorf("--%v", err)
	}
	req.UserSet = true
	if p := c.String("seccomp-profile"); p != "" {
		if req.Seccomp, err = seccomp.Load(p); err != nil {
			return req, err
		}
	}
	if req.Lang == "" {
		if c.IsSet("code") || c.IsSet("file") {
			return req, errors.New("-c and -f need --lang (or use --image REF -- COMMAND)")
		}
		return req, nil
	}
	switch {
	case c.IsSet("code") && c.IsSet("file"):
		return req, errors.New("give the code with -c or -f, not both")
	case c.IsSet("code"):
		req.Code = []byte(c.String("code"))
	case c.IsSet("file"):
		req.Code, err = readCode(c.String("file"))
	default:
		if isTerminal(os.Stdin) {
			fmt.Fprintln(os.Stderr, "boxer: reading the program from stdin; end it with Ctrl-D (or give -c CODE or -f FILE)")
		}
		req.Code, err = io.ReadAll(io.LimitReader(os.Stdin, maxCode+1))
		if err == nil && len(req.Code) > maxCode {
			err = fmt.Errorf("code on stdin is larger than %d bytes", maxCode)
		}
	}
	return req, err
}

func readCode(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-f: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("-f: %v", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("-f %s: not a regular file", path)
	}
	if st.Size() > maxCode {
		return nil, fmt.Errorf("-f %s: larger than %d bytes", path, maxCode)
	}
	return io.ReadAll(f)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
