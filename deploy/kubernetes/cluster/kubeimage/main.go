// Command kubeimage writes an image archive that 'ctr images import' takes,
// without a container engine: the test cluster's images (boxer's, the pause
// image, CoreDNS) are a base layer (optional: a Debian layer that 'boxer
// image build' left in boxer's layer cache) and a layer of files appended
// with go-containerregistry's mutate.
//
//	kubeimage -o boxer.tar -name boxer.test/boxer:cluster \
//	  -debian ca-certificates,curl -file bin/boxer=/usr/local/bin/boxer \
//	  -entrypoint /usr/local/bin/boxer
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxer-dev/boxer/snapshots"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type files []string

func (f *files) String() string     { return strings.Join(*f, " ") }
func (f *files) Set(s string) error { *f = append(*f, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kubeimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kubeimage", flag.ContinueOnError)
	out := fs.String("o", "", "the archive to write")
	ref := fs.String("name", "", "the image's name")
	debian := fs.String("debian", "", "comma-separated Debian packages: the base is the layer 'boxer image build --packages' cached for them")
	cache := fs.String("cache", "/var/lib/boxer/cache", "boxer's layer cache")
	entry := fs.String("entrypoint", "", "the entrypoint, one argument")
	var add files
	fs.Var(&add, "file", "SRC=DST: a file of the top layer (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *ref == "" {
		return errors.New("-o and -name are needed")
	}
	tag, err := name.NewTag(*ref)
	if err != nil {
		return fmt.Errorf("parsing -name: %w", err)
	}
	img := empty.Image
	if *debian != "" {
		o := snapshots.BuildOptions{Packages: strings.Split(*debian, ","), Suite: "bookworm", Mirror: "http://deb.debian.org/debian"}
		base := filepath.Join(*cache, o.Key(), "layer.tar")
		layer, err := tarball.LayerFromFile(base)
		if err != nil {
			return fmt.Errorf("reading the base layer (run 'boxer image build NAME --packages %s' first): %w", *debian, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return fmt.Errorf("adding the base layer: %w", err)
		}
	}
	top, err := filesLayer(add)
	if err != nil {
		return err
	}
	if img, err = mutate.AppendLayers(img, top); err != nil {
		return fmt.Errorf("adding the files: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if *entry != "" {
		cfg.Config.Entrypoint = []string{*entry}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return fmt.Errorf("writing the config: %w", err)
	}
	if err := tarball.WriteToFile(*out, tag, img); err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	return nil
}

// filesLayer is one layer holding each SRC=DST file at DST (with its parent
// directories), with SRC's mode.
func filesLayer(add []string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range add {
		src, dst, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dst) {
			return nil, fmt.Errorf("-file %q: want SRC=/DST", f)
		}
		var parents []string
		for d := path.Dir(dst); d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755}); err != nil {
					return nil, err
				}
			}
		}
		if err := addFile(tw, src, dst[1:]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

func addFile(tw *tar.Writer, src, name string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size()}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}
