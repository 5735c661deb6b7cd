package main

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

func imageCommand() *cli.Command {
	return &cli.Command{
		Name:         "image",
		Usage:        "build, import, pull, list and remove images",
		OnUsageError: usageError,
		Subcommands:  []*cli.Command{imageBuildCommand(), imageImportCommand(), imagePullCommand(), imageLsCommand(), imageRmCommand(), imagePruneCommand()},
	}
}

func debianFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "suite", Value: defaultSuite, Usage: "Debian suite"},
		&cli.StringFlag{Name: "mirror", Value: defaultMirror, Usage: "Debian mirror `URL`"},
	}
}

func imageBuildCommand() *cli.Command {
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
		OnUsageError: usageError,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "packages", Usage: "comma-separated Debian packages, e.g. python3,tzdata"},
		}, debianFlags()...), dockerfileFlags()...),
		Action: func(c *cli.Context) error {
			if c.String("file") != "" {
				return buildDockerfile(c)
			}
			packages, suite, mirror := c.String("packages"), c.String("suite"), c.String("mirror")
			args := c.Args().Slice()
			if len(args) != 1 {
				return fail("image build needs exactly one NAME, e.g. 'boxer image build mypy --packages python3'")
			}
			var pkgs []string
			for _, p := range strings.Split(packages, ",") {
				if p = strings.TrimSpace(p); p != "" {
					pkgs = append(pkgs, p)
				}
			}
			return buildImage(c, snapshots.BuildOptions{
				Name:     args[0],
				Packages: pkgs,
				Suite:    suite,
				Mirror:   mirror,
			})
		},
	}
}

func buildImage(c *cli.Context, o snapshots.BuildOptions) error {
	if err := validPackages(o.Packages); err != nil {
		return err
	}
	if !validName.MatchString(o.Name) {
		return fail("invalid image name %q: use lowercase letters, digits and . _ - /", o.Name)
	}
	if !validSuite.MatchString(o.Suite) {
		return fail("invalid --suite %q: a Debian suite such as bookworm", o.Suite)
	}
	if u, err := url.Parse(o.Mirror); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("invalid --mirror %q: an http(s) URL such as %s", o.Mirror, defaultMirror)
	}
	r, err := connect(c, os.Stderr, false)
	if err != nil {
		return err
	}
	defer r.Close()
	o.CacheDir = daemon.FromEnv().Cache
	o.Progress = os.Stderr
	start := time.Now()
	img, err := snapshots.Build(c.Context, r.Client(), o)
	if fault.Is(err) {
		return hostFault(err)
	}
	if err != nil {
		return fail("building image %s: %v", o.Name, err)
	}
	fmt.Fprintf(os.Stderr, "boxer: image %s ready (%s) in %.1fs\n", img.Name, img.Digest, time.Since(start).Seconds())
	return nil
}

var (
	validName  = regexp.MustCompile(`^[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_.-]+)?$`)
	validSuite = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// validPackages refuses names debootstrap would pass to apt as options.
func validPackages(pkgs []string) error {
	for _, p := range pkgs {
		for i, ch := range p {
			ok := ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || i > 0 && strings.ContainsRune("+-.", ch)
			if !ok {
				return fail("invalid Debian package name %q", p)
			}
		}
	}
	return nil
}

func imageLsCommand() *cli.Command {
	return &cli.Command{
		Name:         "ls",
		Usage:        "list images: name, digest, size, creation time",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "steps", Usage: "list the Dockerfile build cache instead: each entry and its step"},
		},
		Action: func(c *cli.Context) error {
			r, err := connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			if c.Bool("steps") {
				return listSteps(c, r.Client())
			}
			imgs, err := snapshots.List(c.Context, r.Client())
			if err != nil {
				return fail("%v", err)
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

func imageRmCommand() *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove images",
		ArgsUsage: "REF...",
		Description: `Removes each name. The image itself goes with its last name: removing one of
several names of an image only removes that name. The last name of an
image that a running sandbox uses is refused.`,
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fail("image rm needs at least one REF (see 'boxer image ls')")
			}
			r, err := connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			for _, ref := range c.Args().Slice() {
				err := snapshots.Remove(c.Context, r.Client(), ref)
				if errors.Is(err, snapshots.ErrImageNotFound) {
					return fail("image %s not found (see 'boxer image ls')", ref)
				} else if err != nil {
					return fail("%v", err)
				}
				fmt.Println(ref)
			}
			return nil
		},
	}
}

func imageImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import an OCI layout tar or a docker-archive tar ('docker save')",
		ArgsUsage: "FILE",
		Description: `Prints the names it imported: those the archive gives its images, and REF
if --name is given. An image the archive leaves unnamed, without --name, is
named import-<12 hex digits of its manifest digest>.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "name the imported image `REF` (too)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fail("image import needs exactly one FILE, e.g. 'boxer image import image.tar'")
			}
			file := c.Args().First()
			if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
				return fail("image import: %s is not a readable file", file)
			}
			r, err := connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			imgs, err := snapshots.Import(c.Context, r.Client(), file, c.String("name"), os.Stderr)
			if err != nil {
				return fail("%v (is it an OCI layout or docker-archive tar?)", err)
			}
			for _, img := range imgs {
				fmt.Println(img.Name)
			}
			return nil
		},
	}
}

func imagePullCommand() *cli.Command {
	return &cli.Command{
		Name:         "pull",
		Usage:        "pull an image from a registry",
		ArgsUsage:    "REF",
		Description:  `Short names resolve as docker's do: python:3 is docker.io/library/python:3.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "plain-http", Usage: "talk HTTP, not HTTPS, to the registry"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fail("image pull needs exactly one REF, e.g. 'boxer image pull docker.io/library/python:3.12-slim'")
			}
			r, err := connect(c, os.Stderr, false)
			if err != nil {
				return err
			}
			defer r.Close()
			if isTerminal(os.Stderr) {
				fmt.Fprintf(os.Stderr, "boxer: pulling %s\n", c.Args().First())
			}
			img, err := snapshots.Pull(c.Context, r.Client(), c.Args().First(), c.Bool("plain-http"), os.Stderr)
			if err != nil {
				return fail("%v", err)
			}
			fmt.Println(img.Name)
			return nil
		},
	}
}
