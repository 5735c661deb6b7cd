package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/boxer-dev/boxer/snapshots"
)

// helloSource is a static program for images that hold nothing else: no
// shell, no /workspace, no /proc, no user in their config.
const helloSource = `package main

import (
	"fmt"
	"os"
)

func main() {
	wd, _ := os.Getwd()
	_, err := os.Stat("/proc/self/status")
	fmt.Println("hello", os.Getuid(), wd, err == nil)
}
`

// buildHello compiles helloSource statically and returns the binary.
func buildHello(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(helloSource), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644))
	cmd := exec.Command("go", "build", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hello: %v: %s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "hello"))
	must(t, err)
	return bin
}

// dockerArchive writes what 'docker save' writes for a one-layer image
// holding /hello, tagged tag.
func dockerArchive(t *testing.T, hello []byte, tag string) string {
	t.Helper()
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	must(t, lw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o755, Size: int64(len(hello)), Typeflag: tar.TypeReg}))
	_, err := lw.Write(hello)
	must(t, err)
	must(t, lw.Close())
	sum := sha256.Sum256(layer.Bytes())
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/hello"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	manifest, _ := json.Marshal([]map[string]any{{
		"Config":   "config.json",
		"RepoTags": []string{tag},
		"Layers":   []string{"layer/layer.tar"},
	}})
	file := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(file)
	must(t, err)
	w := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{"config.json", cfg}, {"layer/layer.tar", layer.Bytes()}, {"manifest.json", manifest}} {
		must(t, w.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}))
		_, err := w.Write(e.data)
		must(t, err)
	}
	must(t, w.Close())
	must(t, f.Close())
	return file
}

func TestImportDockerArchive(t *testing.T) {
	file := dockerArchive(t, buildHello(t), "hello-docker:1")
	r := boxer(t, nil, "image", "import", file)
	if r.code != 0 || !strings.Contains(r.stdout, "docker.io/library/hello-docker:1") {
		t.Fatalf("import: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// No user in the config, no mount points in the layer: it still runs
	// as 65534, in /workspace, with /proc.
	run := boxer(t, nil, "run", "--image", "hello-docker:1", "--", "/hello")
	if run.code != 0 || run.stdout != "hello 65534 /workspace true\n" {
		t.Errorf("run: exit %d stdout %q stderr %q", run.code, run.stdout, run.stderr)
	}
	if rm := boxer(t, nil, "image", "rm", "hello-docker:1"); rm.code != 0 {
		t.Errorf("rm: %q", rm.stderr)
	}
	assertClean(t)
}

// TestViewSurvivesCollector re-creates a foreign image's view again and
// again while containerd's garbage collector runs without pause: the
// mount-point layer under the view, unreferenced between two views, must
// never be collected between being found (or made) and being used.
func TestViewSurvivesCollector(t *testing.T) {
	file := dockerArchive(t, buildHello(t), "hello-gc:1")
	if r := boxer(t, nil, "image", "import", file); r.code != 0 {
		t.Fatalf("import: exit %d stderr %q", r.code, r.stderr)
	}
	defer func() {
		if rm := boxer(t, nil, "image", "rm", "hello-gc:1"); rm.code != 0 {
			t.Errorf("rm: %q", rm.stderr)
		}
		assertClean(t)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	collected := make(chan int)
	go func() {
		n := 0
		defer func() { collected <- n }()
		ls := client.LeasesService()
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, err := ls.Create(ctx, leases.WithRandomID())
			if err != nil {
				return
			}
			if ls.Delete(ctx, l, leases.SynchronousDelete) == nil {
				n++
			}
		}
	}()
	sn := client.SnapshotService(snapshots.Snapshotter)
	var failed error
	for i := 0; i < 40 && failed == nil; i++ {
		var r snapshots.Rootfs
		if r, failed = snapshots.Resolve(ctx, client, "hello-gc:1"); failed == nil {
			failed = sn.Remove(ctx, r.Key)
		}
	}
	close(stop)
	if n := <-collected; n < 10 {
		t.Errorf("the collector ran only %d times", n)
	}
	if failed != nil {
		t.Fatal(failed)
	}
}

func TestImportOCILayout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := client.GetImage(ctx, "boxer/bash")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "oci.tar")
	f, err := os.Create(file)
	must(t, err)
	must(t, client.Export(ctx, f, archive.WithImage(client.ImageService(), img.Name()), archive.WithSkipNonDistributableBlobs()))
	must(t, f.Close())
	r := boxer(t, nil, "image", "import", "--name", "imported/bash:oci", file)
	if r.code != 0 {
		t.Fatalf("import: exit %d %q", r.code, r.stderr)
	}
	run := boxer(t, nil, "run", "--image", "imported/bash:oci", "--", "bash", "-c", "echo from oci; id -u")
	if run.stdout != "from oci\n65534\n" {
		t.Errorf("run: %q %q", run.stdout, run.stderr)
	}
	boxer(t, nil, "image", "rm", "imported/bash:oci")
	for _, bad := range []string{file + ".missing", "/etc/passwd"} {
		if r := boxer(t, nil, "image", "import", bad); r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("import %s: exit %d %q", bad, r.code, r.stderr)
		}
	}
	assertClean(t)
}

// TestImportNamesAndAliases: 'image import FILE --name REF' is read as
// documented; an archive that names its image gets no name of boxer's
// making; one of two names of an image is removed alone, even while a
// sandbox uses the image, whose view stays; the image and its view go
// with its last name (TestImageRmRefusedWhileInUse: not while in use).
func TestImportNamesAndAliases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := func() []string {
		imgs, err := client.ImageService().List(ctx)
		must(t, err)
		var out []string
		for _, img := range imgs {
			out = append(out, img.Name)
		}
		return out
	}
	file := dockerArchive(t, buildHello(t), "hello-alias:1")
	// The archive's name only.
	if r := boxer(t, nil, "image", "import", file); r.code != 0 || r.stdout != "docker.io/library/hello-alias:1\n" {
		t.Fatalf("import: exit %d stdout %q stderr %q, want the archive's name only", r.code, r.stdout, r.stderr)
	}
	// --name after FILE, as the usage writes it: a second name.
	r := boxer(t, nil, "image", "import", file, "--name", "alias/hello:2")
	if r.code != 0 || !strings.Contains(r.stdout, "alias/hello:2\n") {
		t.Fatalf("import FILE --name: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, n := range names() {
		if strings.HasPrefix(n, "import-") {
			t.Errorf("an image named %s, for an archive that names its image", n)
		}
	}
	if rm := boxer(t, nil, "image", "rm", "alias/hello:2"); rm.code != 0 || rm.stdout != "alias/hello:2\n" {
		t.Errorf("rm of the second name: exit %d stdout %q stderr %q", rm.code, rm.stdout, rm.stderr)
	}
	if run := boxer(t, nil, "run", "--image", "hello-alias:1", "--", "/hello"); run.code != 0 || run.stdout != "hello 65534 /workspace true\n" {
		t.Errorf("run after the second name went: exit %d stdout %q stderr %q", run.code, run.stdout, run.stderr)
	}
	img, err := client.ImageService().Get(ctx, "docker.io/library/hello-alias:1")
	must(t, err)
	view := "boxer-view-" + img.Target.Digest.Encoded()
	sn := client.SnapshotService(snapshots.Snapshotter)
	if _, err := sn.Stat(ctx, view); err != nil {
		t.Fatalf("the image's view after a run: %v", err)
	}
	if rm := boxer(t, nil, "image", "rm", "hello-alias:1"); rm.code != 0 {
		t.Errorf("rm of the last name: exit %d stderr %q", rm.code, rm.stderr)
	}
	if _, err := sn.Stat(ctx, view); !errdefs.IsNotFound(err) {
		t.Errorf("the view after the image's last name went: %v, want not found", err)
	}
	if slices.ContainsFunc(names(), func(n string) bool { return strings.Contains(n, "hello") }) {
		t.Errorf("images left: %q", names())
	}

	// A second name of an image in use: boxer/bash, exported and imported
	// under another name.
	bash, err := client.GetImage(ctx, "boxer/bash")
	must(t, err)
	oci := filepath.Join(t.TempDir(), "bash.tar")
	f, err := os.Create(oci)
	must(t, err)
	must(t, client.Export(ctx, f, archive.WithImage(client.ImageService(), bash.Name()), archive.WithSkipNonDistributableBlobs()))
	must(t, f.Close())
	if r := boxer(t, nil, "image", "import", oci, "--name", "alias/bash:1"); r.code != 0 || !strings.Contains(r.stdout, "alias/bash:1") {
		t.Fatalf("import: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--image", "boxer/bash", "--", "sleep", "30")
	cmd.Env = testEnv
	must(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		assertClean(t)
	}()
	waitForTask(t)
	if rm := boxer(t, nil, "image", "rm", "alias/bash:1"); rm.code != 0 {
		t.Errorf("rm of a second name of an image in use: exit %d stderr %q", rm.code, rm.stderr)
	}
	if _, err := sn.Stat(ctx, "boxer-view-"+bash.Target().Digest.Encoded()); err != nil {
		t.Errorf("boxer/bash's view after its second name went: %v", err)
	}
}

// TestPullFromLoopbackRegistry pushes boxer/bash to a registry this test
// serves on 127.0.0.1, then pulls it back under its registry name and runs it.
func TestPullFromLoopbackRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := fmt.Sprintf("%s/boxer/bash:pushed", host)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := client.GetImage(ctx, "boxer/bash")
	if err != nil {
		t.Fatal(err)
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, config.HostOptions{DefaultScheme: "http"})})
	if err := client.Push(ctx, ref, img.Target(), containerd.WithResolver(resolver)); err != nil {
		t.Fatalf("pushing to the loopback registry: %v", err)
	}

	r := boxer(t, nil, "image", "pull", "--plain-http", ref)
	if r.code != 0 || strings.TrimSpace(r.stdout) != ref {
		t.Fatalf("pull: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	run := boxer(t, nil, "run", "--image", ref, "--", "bash", "-c", "echo pulled")
	if run.stdout != "pulled\n" {
		t.Errorf("run: %q %q", run.stdout, run.stderr)
	}
	boxer(t, nil, "image", "rm", ref)
	// Without --plain-http the registry (HTTP only) cannot be reached: one line, 125.
	if r := boxer(t, nil, "image", "pull", ref); r.code != 125 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("pull over https: exit %d %q", r.code, r.stderr)
	}
	assertClean(t)
}
