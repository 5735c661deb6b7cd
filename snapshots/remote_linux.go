package snapshots

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/platforms"
	digest "github.com/opencontainers/go-digest"
)

// Import reads an OCI image layout tar or a docker-archive tar ('docker
// save') from file, stores its images and unpacks them. name, if set, names
// an image the archive leaves unnamed.
func Import(ctx context.Context, client *containerd.Client, file, name string, progress io.Writer) ([]Image, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ctx, done, err := client.WithLease(ctx)
	if err != nil {
		return nil, err
	}
	defer done(context.WithoutCancel(ctx))
	imgs, err := client.Import(ctx, f, importOptions(name)...)
	if err != nil {
		return nil, fmt.Errorf("importing %s: %w", file, err)
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		if err := unpackImage(ctx, client, img, progress); err != nil {
			return nil, err
		}
		out = append(out, toImage(img))
	}
	return out, nil
}

// importOptions are what Import asks of containerd's importer: this
// platform's images, blobs the archive leaves out skipped, and a name for
// every manifest: name, if set (as well as the archive's own), else the
// archive's, else import-<digest> for one the archive leaves unnamed.
func importOptions(name string) []containerd.ImportOpt {
	opts := []containerd.ImportOpt{
		containerd.WithImportPlatform(platforms.Default()),
		containerd.WithSkipMissing(),
		containerd.WithDigestRef(func(d digest.Digest) string {
			if name != "" {
				return name
			}
			// The digest is the archive's index.json, unchecked: a
			// malformed one names nothing (its import fails on the blob).
			if d.Validate() != nil {
				return ""
			}
			return "import-" + d.Encoded()[:12]
		}),
	}
	if name != "" {
		opts = append(opts, containerd.WithImageRefTranslator(func(string) string { return name }))
	} else {
		// A manifest the archive names needs no name of boxer's making.
		opts = append(opts, containerd.WithSkipDigestRef(func(archiveName string) bool { return archiveName != "" }))
	}
	return opts
}

// Pull fetches ref from its registry, over plain HTTP if plainHTTP, and
// unpacks it.
func Pull(ctx context.Context, client *containerd.Client, ref string, plainHTTP bool, progress io.Writer) (Image, error) {
	ref = NormalizeRef(ref)
	// HTTPS unless told otherwise, for loopback registries too (containerd
	// would fall back to HTTP for those on its own).
	hosts := config.HostOptions{DefaultScheme: "https"}
	if plainHTTP {
		hosts.DefaultScheme = "http"
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, hosts)})
	start := time.Now()
	img, err := client.Pull(ctx, ref,
		containerd.WithResolver(resolver),
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(Snapshotter),
		containerd.WithPlatformMatcher(platforms.Default()),
	)
	if err != nil {
		// Only a hint: the TLS failure itself is text from net/http.
		if strings.Contains(err.Error(), "HTTP response to HTTPS client") {
			return Image{}, fmt.Errorf("pulling %s: the registry speaks plain HTTP: add --plain-http if you trust it", ref)
		}
		return Image{}, fmt.Errorf("pulling %s: %w", ref, err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "boxer: pulled %s in %.1fs\n", ref, time.Since(start).Seconds())
	}
	return toImage(img.Metadata()), nil
}

func unpackImage(ctx context.Context, client *containerd.Client, img images.Image, progress io.Writer) error {
	return unpack(ctx, client, img, BuildOptions{Progress: progress})
}
