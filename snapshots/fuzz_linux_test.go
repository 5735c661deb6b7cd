package snapshots

import (
	"archive/tar"
	"bytes"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	digest "github.com/opencontainers/go-digest"
)

// FuzzImport feeds archives to containerd's importer with the options
// Import gives it, on a client whose content store is a directory and
// whose image and lease stores are maps: the part of 'boxer import' that
// runs in boxer's own process, up to the unpack (which needs a
// snapshotter, and so a containerd). The archive is an OCI layout
// (index.json, oci-layout) and a docker-archive (manifest.json) around
// three blobs: a manifest, a config and a layer. In the JSON, DIGESTn,
// SIZEn and PATHn stand for blob n's digest, size and path in the
// archive, so that the fuzzer keeps references that resolve. A non-empty
// raw is the whole archive instead. Nothing panics, every image made has
// a name, and the name Import is given is one of them.
func FuzzImport(f *testing.F) {
	layer := tarOf(f, map[string][]byte{"hello.txt": []byte("hi\n")})
	config := []byte(`{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin"],"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["DIGEST2"]}}`)
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"DIGEST1","size":SIZE1},` +
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"DIGEST2","size":SIZE2}]}`)
	index := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"DIGEST0","size":SIZE0,` +
		`"annotations":{"org.opencontainers.image.ref.name":"latest","io.containerd.image.name":"docker.io/library/x:1"},` +
		`"platform":{"architecture":"amd64","os":"linux"}}]}`)
	docker := []byte(`[{"Config":"PATH1","RepoTags":["x:1","y"],"Layers":["PATH2"]}]`)
	for _, s := range []struct {
		index, docker, manifest, config, layer []byte
		name                                   string
		raw                                    []byte
	}{
		{index, nil, manifest, config, layer, "", nil},
		{index, nil, manifest, config, layer, "boxer/mine", nil},
		{nil, docker, nil, config, layer, "", nil},
		{nil, docker, nil, config, layer, "named", nil},
		{index, docker, manifest, config, layer, "", nil},
		{[]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:ab","size":1}]}`), nil, manifest, config, layer, "", nil},
		{[]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"nocolon","size":1}]}`), nil, manifest, config, layer, "", nil},
		{[]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"DIGEST0","size":SIZE0}]}`), nil, index, config, layer, "", nil},
		{[]byte(`{"manifests":[{"digest":"DIGEST0","size":-1}]}`), nil, manifest, config, layer, "", nil},
		{nil, []byte(`[{"Config":"../../etc/passwd","Layers":["/dev/zero"]}]`), nil, config, layer, "", nil},
		{nil, nil, nil, nil, nil, "", []byte("not a tar")},
		{nil, nil, nil, nil, nil, "", nil},
	} {
		f.Add(s.index, s.docker, s.manifest, s.config, s.layer, s.name, s.raw)
	}
	// The content store warns, per store, that this filesystem has no
	// fs-verity.
	if err := log.SetLevel("error"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, index, docker, manifest, config, layer []byte, name string, raw []byte) {
		archive := raw
		if len(archive) == 0 {
			archive = archiveOf(t, index, docker, manifest, config, layer)
		}
		store, err := local.NewStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		client, err := containerd.New("", containerd.WithServices(
			containerd.WithContentStore(labelless{store}),
			containerd.WithImageStore(&mapImages{images: map[string]images.Image{}}),
			containerd.WithLeasesService(mapLeases{}),
		))
		if err != nil {
			t.Fatal(err)
		}
		ctx := namespaces.WithNamespace(context.Background(), "boxer-fuzz")
		imgs, err := client.Import(ctx, bytes.NewReader(archive), importOptions(name)...)
		if err != nil {
			return
		}
		named := false
		for _, img := range imgs {
			got := toImage(img)
			if got.Name == "" {
				t.Fatalf("imported an image without a name: %+v", img)
			}
			named = named || got.Name == name
		}
		// The archive's own names stay; name is the name of every
		// manifest besides.
		if name != "" && len(imgs) > 0 && !named {
			t.Fatalf("imported %+v, none named %q", imgs, name)
		}
	})
}

// archiveOf writes the fuzzed parts as an archive (see FuzzImport).
func archiveOf(t *testing.T, index, docker, manifest, config, layer []byte) []byte {
	t.Helper()
	blobs := [][]byte{manifest, config, layer}
	subst := func(b []byte, upto int) []byte {
		s := string(b)
		for i := upto; i >= 0; i-- {
			d := digest.FromBytes(blobs[i])
			s = strings.NewReplacer("DIGEST"+string(rune('0'+i)), d.String(),
				"SIZE"+string(rune('0'+i)), strconv.Itoa(len(blobs[i])),
				"PATH"+string(rune('0'+i)), "blobs/sha256/"+d.Encoded()).Replace(s)
		}
		return []byte(s)
	}
	// The manifest names the config and the layer; the config the layer.
	blobs[1] = subst(blobs[1], 2)
	blobs[0] = subst(blobs[0], 2)
	files := map[string][]byte{}
	for _, b := range blobs {
		if b != nil {
			files["blobs/sha256/"+digest.FromBytes(b).Encoded()] = b
		}
	}
	if index != nil {
		files["index.json"] = subst(index, 2)
		files["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	}
	if docker != nil {
		files["manifest.json"] = subst(docker, 2)
	}
	return tarOf(t, files)
}

func tarOf(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// labelless is a content store that takes label updates and drops them:
// the local store has no metadata, which a containerd keeps in its own
// database, and the fuzzed store is thrown away whole.
type labelless struct{ content.Store }

func (s labelless) Update(_ context.Context, info content.Info, _ ...string) (content.Info, error) {
	return info, nil
}

// mapImages is an image store in a map, as much of one as Import uses.
type mapImages struct {
	mu     sync.Mutex
	images map[string]images.Image
}

func (m *mapImages) Get(_ context.Context, name string) (images.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	img, ok := m.images[name]
	if !ok {
		return images.Image{}, errdefs.ErrNotFound
	}
	return img, nil
}

func (m *mapImages) List(context.Context, ...string) ([]images.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []images.Image
	for _, img := range m.images {
		out = append(out, img)
	}
	return out, nil
}

func (m *mapImages) Create(_ context.Context, img images.Image) (images.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.images[img.Name]; ok {
		return images.Image{}, errdefs.ErrAlreadyExists
	}
	m.images[img.Name] = img
	return img, nil
}

func (m *mapImages) Update(_ context.Context, img images.Image, _ ...string) (images.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.images[img.Name]; !ok {
		return images.Image{}, errdefs.ErrNotFound
	}
	m.images[img.Name] = img
	return img, nil
}

func (m *mapImages) Delete(_ context.Context, name string, _ ...images.DeleteOpt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.images, name)
	return nil
}

// mapLeases hands out leases that hold nothing: the fuzzed store is
// thrown away whole.
type mapLeases struct{}

func (mapLeases) Create(_ context.Context, opts ...leases.Opt) (leases.Lease, error) {
	var l leases.Lease
	for _, o := range opts {
		if err := o(&l); err != nil {
			return leases.Lease{}, err
		}
	}
	return l, nil
}

func (mapLeases) Delete(context.Context, leases.Lease, ...leases.DeleteOpt) error { return nil }

func (mapLeases) List(context.Context, ...string) ([]leases.Lease, error) { return nil, nil }

func (mapLeases) AddResource(context.Context, leases.Lease, leases.Resource) error { return nil }

func (mapLeases) DeleteResource(context.Context, leases.Lease, leases.Resource) error { return nil }

func (mapLeases) ListResources(context.Context, leases.Lease) ([]leases.Resource, error) {
	return nil, nil
}
