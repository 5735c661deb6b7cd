package imagecmd

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/snapshots"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

// Debian defaults of image builds.
const (
	defaultSuite  = "bookworm"
	defaultMirror = "http://deb.debian.org/debian"
)

// Command is boxer's image command: build, import, pull, list and
// remove images, and prune the Dockerfile build cache.
func Command(e Env) *cli.Command {
	return &cli.Command{
		Name:         "image",
		Usage:        "build, import, pull, list and remove images",
		OnUsageError: e.UsageError,
		Subcommands:  []*cli.Command{e.imageBuildCommand(), e.imageImportCommand(), e.imagePullCommand(), e.imageLsCommand(), e.imageRmCommand(), e.imagePruneCommand()},
	}
}

// DebianFlags are the flags of a Debian image build (image build,
// setup).
func DebianFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "suite", Value: defaultSuite, Usage: "Debian suite"},
		&cli.StringFlag{Name: "mirror", Value: defaultMirror, Usage: "Debian mirror `URL`"},
	}
}

func (e Env) imageBuildCommand() *cli.Command {
	return &cli.Command{
		Name:      "build",
		Usage:     "build a minimal Debian image with debootstrap, or an image from a Dockerfile (-f)",
		ArgsUsage: "NAME [CONTEXT]",
		Description: `Stored as boxer/NAME when NAME has no slash. A build with the same inputs
(packages, suite, mirror) as an earlier one returns at once.

  boxer image build mypy --packages python3,python3-requests

With -f, each RUN of the Dockerfile runs in a sandbox of its own and each
step's layer is cached (see 'boxer image prune'):

  boxer image build myenv -f Dockerfile --allow-host pypi.org --allow-host files.pythonhosted.org .`,
		OnUsageError: e.UsageError,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "packages", Usage: "comma-separated Debian packages, e.g. python3,tzdata"},
		}, DebianFlags()...), dockerfileFlags()...),
		Action: func(c *cli.Context) error {
			if c.String("file") != "" {
				return e.buildDockerfile(c)
			}
			packages, suite, mirror := c.String("packages"), c.String("suite"), c.String("mirror")
			args := c.Args().Slice()
			if len(args) != 1 {
				return e.Fail("image build needs exactly one NAME, e.g. 'boxer image build mypy --packages python3'")
			}
			var pkgs []string
			for _, p := range strings.Split(packages, ",") {
				if p = strings.TrimSpace(p); p != "" {
					pkgs = append(pkgs, p)
				}
			}
			return e.BuildImage(c, snapshots.BuildOptions{
				Name:     args[0],
				Packages: pkgs,
				Suite:    suite,
				Mirror:   mirror,
			})
		},
	}
}

// BuildImage builds a minimal Debian image with debootstrap (image
// build, setup).
func (e Env) BuildImage(c *cli.Context, o snapshots.BuildOptions) error {
	if err := e.validPackages(o.Packages); err != nil {
		return err
	}
	if !validName.MatchString(o.Name) {
		return e.Fail("invalid image name %q: use lowercase letters, digits and . _ - /", o.Name)
	}
	if !validSuite.MatchString(o.Suite) {
		return e.Fail("invalid --suite %q: a Debian suite such as bookworm", o.Suite)
	}
	if u, err := url.Parse(o.Mirror); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return e.Fail("invalid --mirror %q: an http(s) URL such as %s", o.Mirror, defaultMirror)
	}
	r, err := e.Connect(c, os.Stderr, false)
	if err != nil {
		return err
	}
	defer r.Close()
	o.CacheDir = daemon.FromEnv().Cache
	o.Progress = os.Stderr
	start := time.Now()
	img, err := snapshots.Build(c.Context, r.Client(), o)
	if fault.Is(err) {
		return e.HostFault(err)
	}
	if err != nil {
		return e.Fail("building image %s: %v", o.Name, err)
	}
	fmt.Fprintf(os.Stderr, "boxer: image %s ready (%s) in %.1fs\n", img.Name, img.Digest, time.Since(start).Seconds())
	return nil
}

var (
	validName  = regexp.MustCompile(`^[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_.-]+)?$`)
	validSuite = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// validPackages refuses names debootstrap would pass to apt as options.
func (e Env) validPackages(pkgs []string) error {
	for _, p := range pkgs {
		for i, ch := range p {
			ok := ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || i > 0 && strings.ContainsRune("+-.", ch)
			if !ok {
				return e.Fail("invalid Debian package name %q", p)
			}
		}
	}
	return nil
}

func (e Env) imageLsCommand() *cli.Command {
	return &cli.Command{
		Name:         "ls",
		Usage:        "list images: name, digest, size, creation time",
		OnUsageError: e.UsageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "steps", Usage: "list the Dockerfile build cache instead: each entry and its step"},
		},
		Action: func(c *cli.Context) error {
			r, err := e.Connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			if c.Bool("steps") {
				return e.listSteps(c, r.Client())
			}
			imgs, err := snapshots.List(c.Context, r.Client())
			if err != nil {
				return e.Fail("%v", err)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tDIGEST\tSIZE\tCREATED")
			for _, img := range imgs {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", img.Name, img.Digest.Encoded()[:12], units.HumanSize(float64(img.Size)), img.Created.Format(time.RFC3339))
			}
			return w.Flush()
		},
	}
}

func (e Env) imageRmCommand() *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove images",
		ArgsUsage: "REF...",
		Description: `Removes each name (a name without a '/' is also tried as boxer/NAME, which
'image build NAME' stores). The image itself goes with its last name: removing one of
several names of an image only removes that name. The last name of an
image that a running sandbox uses is refused.`,
		OnUsageError: e.UsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return e.Fail("image rm needs at least one REF (see 'boxer image ls')")
			}
			r, err := e.Connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			for _, ref := range c.Args().Slice() {
				err := snapshots.Remove(c.Context, r.Client(), ref)
				if short := snapshots.Normalize(ref); errors.Is(err, snapshots.ErrImageNotFound) && short != ref {
					// The name 'image build NAME' stored it under.
					if err = snapshots.Remove(c.Context, r.Client(), short); err == nil {
						ref = short
					}
				}
				if errors.Is(err, snapshots.ErrImageNotFound) {
					return e.Fail("image %s not found (see 'boxer image ls')", ref)
				} else if err != nil {
					return e.Fail("%v", err)
				}
				fmt.Println(ref)
			}
			return nil
		},
	}
}

func (e Env) imageImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import an OCI layout tar or a docker-archive tar ('docker save')",
		ArgsUsage: "FILE",
		Description: `Prints the names it imported: those the archive gives its images, and REF
if --name is given. An image the archive leaves unnamed, without --name, is
named import-<12 hex digits of its manifest digest>.`,
		OnUsageError: e.UsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "name the imported image `REF` (too)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return e.Fail("image import needs exactly one FILE, e.g. 'boxer image import image.tar'")
			}
			file := c.Args().First()
			if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
				return e.Fail("image import: %s is not a readable file", file)
			}
			r, err := e.Connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			imgs, err := snapshots.Import(c.Context, r.Client(), file, c.String("name"), os.Stderr)
			if err != nil {
				return e.Fail("%v (is it an OCI layout or docker-archive tar?)", err)
			}
			for _, img := range imgs {
				fmt.Println(img.Name)
			}
			return nil
		},
	}
}

func (e Env) imagePullCommand() *cli.Command {
	return &cli.Command{
		Name:         "pull",
		Usage:        "pull an image from a registry",
		ArgsUsage:    "REF",
		Description:  `Short names resolve as docker's do: python:3 is docker.io/library/python:3.`,
		OnUsageError: e.UsageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "plain-http", Usage: "talk HTTP, not HTTPS, to the registry"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return e.Fail("image pull needs exactly one REF, e.g. 'boxer image pull docker.io/library/python:3.12-slim'")
			}
			r, err := e.Connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			if e.IsTerminal(os.Stderr) {
				fmt.Fprintf(os.Stderr, "boxer: pulling %s\n", c.Args().First())
			}
			img, err := snapshots.Pull(c.Context, r.Client(), c.Args().First(), c.Bool("plain-http"), os.Stderr)
			if err != nil {
				return e.Fail("%v", err)
			}
			fmt.Println(img.Name)
			return nil
		},
	}
}
