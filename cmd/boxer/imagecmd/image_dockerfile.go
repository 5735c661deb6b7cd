package imagecmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/runner"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

// dockerfileFlags are image build's flags for a Dockerfile build.
func dockerfileFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "build from `DOCKERFILE` (its RUN steps run in sandboxes), with CONTEXT (default .) as COPY's source"},
		&cli.StringSliceFlag{Name: "build-arg", Usage: "`KEY=VALUE` for an ARG of the Dockerfile (repeatable)"},
		&cli.StringSliceFlag{Name: "allow-host", Usage: "let RUN steps reach `HOST[:PORT]` (repeatable, as run's --allow-host); default: no network"},
		&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "wall clock limit of each RUN step"},
		&cli.StringFlag{Name: "memory", Value: "1GiB", Usage: "memory limit of each RUN step, no swap"},
		&cli.Float64Flag{Name: "cpus", Value: runner.DefaultCPUs, Usage: "CPU quota of each RUN step in cores"},
		&cli.Int64Flag{Name: "pids", Value: 256, Usage: "process and thread cap of each RUN step"},
		&cli.StringFlag{Name: "tmp-size", Value: units.BytesSize(runner.DefaultTmpSize), Usage: "size of each RUN step's /tmp"},
		&cli.StringFlag{Name: "disk", Value: units.BytesSize(imagebuild.DefaultDiskBytes), Usage: "what one step may write to its layer"},
		&cli.StringFlag{Name: "runtime", Value: "runc", Usage: "OCI runtime of the RUN steps: " + strings.Join(runner.Runtimes(), " or ") + " (gVisor)"},
		&cli.BoolFlag{Name: "no-cache", Usage: "rerun every step"},
		&cli.BoolFlag{Name: "plain-http", Usage: "pull a FROM image that is not stored over HTTP, not HTTPS"},
	}
}

// buildDockerfile is 'image build NAME -f DOCKERFILE [CONTEXT]'.
func (e Env) buildDockerfile(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) < 1 || len(args) > 2 {
		return e.Fail("image build -f needs NAME and at most one CONTEXT, e.g. 'boxer image build myenv -f Dockerfile .'")
	}
	if c.IsSet("packages") {
		return e.Fail("--packages is for a Debian build: with -f, the Dockerfile says what is installed")
	}
	if !validName.MatchString(args[0]) {
		return e.Fail("invalid image name %q: use lowercase letters, digits and . _ - /", args[0])
	}
	o := imagebuild.Options{
		Name: args[0], Context: ".", AllowHosts: c.StringSlice("allow-host"),
		Timeout: c.Duration("timeout"), CPUs: c.Float64("cpus"), Pids: c.Int64("pids"),
		Runtime: c.String("runtime"), NoCache: c.Bool("no-cache"), PlainHTTP: c.Bool("plain-http"), Progress: os.Stderr,
		BuildArgs: map[string]string{},
	}
	if len(args) == 2 {
		o.Context = args[1]
	}
	if !slices.Contains(runner.Runtimes(), o.Runtime) {
		return e.Fail("invalid --runtime %q: %s", o.Runtime, strings.Join(runner.Runtimes(), " or "))
	}
	if st, err := os.Stat(o.Context); err != nil || !st.IsDir() {
		return e.Fail("image build: the context %s is not a directory", o.Context)
	}
	for _, kv := range c.StringSlice("build-arg") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return e.Fail("invalid --build-arg %q: KEY=VALUE", kv)
		}
		o.BuildArgs[k] = v
	}
	for _, s := range []struct {
		flag string
		dst  *int64
	}{{"memory", &o.MemoryBytes}, {"tmp-size", &o.TmpBytes}, {"disk", &o.DiskBytes}} {
		v, err := units.RAMInBytes(c.String(s.flag))
		if err != nil || v <= 0 {
			return e.Fail("invalid --%s %q: a size such as 512m or 2g", s.flag, c.String(s.flag))
		}
		*s.dst = v
	}
	f, err := os.Open(c.String("file"))
	if err != nil {
		return e.Fail("image build: %v", err)
	}
	df, err := imagebuild.Parse(filepath.Base(c.String("file")), f)
	f.Close()
	if err != nil {
		return e.Fail("%v", err)
	}
	o.Dockerfile = df
	r, err := e.Connect(c, os.Stderr, false)
	if err != nil {
		return err
	}
	defer r.Close()
	start := time.Now()
	res, err := e.buildFromDockerfile(c, r, o)
	var se *imagebuild.StepError
	if errors.As(err, &se) {
		if se.Tail != "" {
			fmt.Fprintf(os.Stderr, "boxer: output of the failed step (last lines):\n%s\n", se.Tail)
		}
		return e.Fail("building image %s: %v", o.Name, err)
	}
	if err != nil {
		return e.Fail("building image %s: %v", o.Name, err)
	}
	fmt.Fprintf(os.Stderr, "boxer: image %s ready (%s) in %.1fs: %d steps, %d cached, %d sandboxes run\n",
		res.Name, res.Digest, time.Since(start).Seconds(), res.Steps, res.Cached, res.Ran)
	return nil
}

// listSteps is 'image ls --steps'.
func (e Env) listSteps(c *cli.Context, client *containerd.Client) error {
	entries, err := imagebuild.CacheEntries(c.Context, client)
	if err != nil {
		return e.Fail("%v", err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCREATED\tSTEP")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\n", e.Name, e.Created.Format(time.RFC3339), e.Step)
	}
	return w.Flush()
}

func (e Env) imagePruneCommand() *cli.Command {
	return &cli.Command{
		Name:  "prune",
		Usage: "remove the Dockerfile build cache (the " + imagebuild.CachePrefix + "... entries)",
		Description: `Each layer a Dockerfile build makes is kept as an image named
` + imagebuild.CachePrefix + `<key>, so that a rebuild reuses it; prune removes them all.
Layers the built images use stay.`,
		OnUsageError: e.UsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return e.Fail("image prune takes no arguments")
			}
			r, err := e.Connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			gone, err := imagebuild.Prune(c.Context, r.Client())
			for _, n := range gone {
				fmt.Println(n)
			}
			if err != nil {
				return e.Fail("%v", err)
			}
			return nil
		},
	}
}
