package imagebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	csnapshots "github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
)

// builder is one build's progress: the image so far (its layers, their
// diff IDs and history), the state of its config and the cache key.
type builder struct {
	o       Options
	h       *sandbox.Host
	client  *containerd.Client
	sn      csnapshots.Snapshotter
	cs      content.Store
	st      *state
	base    string
	plat    ocispec.Platform
	layers  []ocispec.Descriptor
	diffIDs []digest.Digest
	history []ocispec.History
	key     string
	total   int
	res     Result
}

// Build builds o.Dockerfile into the image o.Name on h's containerd: each
// RUN in a sandbox of its own, on a writable snapshot of the layers so
// far, each layer committed through containerd's snapshot and diff
// services and cached by its key. On error nothing of the failed step is
// left (its sandbox, snapshot, mounts and lease go); the steps before it
// stay cached.
func Build(ctx context.Context, h *sandbox.Host, o Options) (Result, error) {
	if h.Userns.InHost {
		return Result{}, errors.New("building from a Dockerfile runs each step as root in a user namespace of its own: not with --userns=host")
	}
	if o.DiskBytes == 0 {
		o.DiskBytes = DefaultDiskBytes
	}
	b := &builder{o: o, h: h, client: h.Containerd, sn: h.Containerd.SnapshotService(snapshots.Snapshotter), cs: h.Containerd.ContentStore()}
	b.total = 1 + len(o.Dockerfile.Steps)
	b.res.Name = snapshots.Normalize(o.Name)
	// Everything made before it is referenced (a layer's blob, a
	// committed snapshot) is the lease's until the build ends.
	ctx, done, err := b.client.WithLease(ctx, leases.WithRandomID(), leases.WithExpiration(24*time.Hour))
	if err != nil {
		return Result{}, fmt.Errorf("creating lease: %w", err)
	}
	defer done(context.WithoutCancel(ctx))
	if err := b.from(ctx); err != nil {
		return Result{}, err
	}
	for i, step := range o.Dockerfile.Steps {
		if err := b.step(ctx, i+2, step); err != nil {
			return Result{}, err
		}
	}
	img, err := b.writeImage(ctx, b.res.Name, map[string]string{LabelStepKey: b.key})
	if err != nil {
		return Result{}, err
	}
	// Its shared view now, so that the first run need not make it.
	if _, err := snapshots.Resolve(ctx, b.client, b.res.Name); err != nil {
		return Result{}, err
	}
	b.res.Digest = img.Target.Digest.String()
	return b.res, nil
}

func (b *builder) progress(format string, args ...any) {
	if b.o.Progress != nil {
		fmt.Fprintf(b.o.Progress, "boxer: "+format+"\n", args...)
	}
}

// from finds (or pulls) the base image and starts the state from it.
func (b *builder) from(ctx context.Context) error {
	df := b.o.Dockerfile
	meta := newState(ocispec.ImageConfig{}, df.Escape)
	for i := range df.MetaArgs {
		meta.declare(&df.MetaArgs[i], b.o.BuildArgs)
	}
	ref, _, err := meta.lex.ProcessWord(df.From, shell.EnvsFromSlice(meta.argEnv()))
	if err != nil {
		return fmt.Errorf("%s:%d: FROM %s: %w", df.Name, df.FromLine, df.From, err)
	}
	b.progress("[1/%d] FROM %s", b.total, ref)
	img, err := b.baseImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("%s:%d: FROM %s: %w", df.Name, df.FromLine, ref, err)
	}
	b.base = img.Name
	i := containerd.NewImage(b.client, img)
	if ok, err := i.IsUnpacked(ctx, snapshots.Snapshotter); err != nil || !ok {
		if err := i.Unpack(ctx, snapshots.Snapshotter); err != nil {
			return fmt.Errorf("unpacking %s: %w", ref, err)
		}
	}
	cfg, err := b.load(ctx, img)
	if err != nil {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	b.plat = cfg.Platform
	b.st = newState(cfg.Config, df.Escape)
	b.key = stepKey("", "FROM "+img.Target.Digest.String())
	if img.Labels[snapshots.LabelBuildKey] != "" || img.Labels[LabelStepKey] != "" {
		// boxer's: built without setuid bits or file capabilities.
		return nil
	}
	// Another's image may hold setuid binaries: a first layer clears them.
	b.key = stepKey(b.key, "strip setuid bits and file capabilities")
	_, err = b.layerStep(ctx, "(clear setuid bits and file capabilities of "+ref+")", func(ctx context.Context, active string, upper string) error {
		return b.onHost(ctx, active, func(root string) error { return snapshots.StripPrivileges(root) })
	})
	return err
}

// baseImage looks ref up as boxer does for a run, and pulls it if it is
// not stored.
func (b *builder) baseImage(ctx context.Context, ref string) (images.Image, error) {
	is := b.client.ImageService()
	img, err := is.Get(ctx, ref)
	if full := snapshots.NormalizeRef(ref); errdefs.IsNotFound(err) && full != ref {
		img, err = is.Get(ctx, full)
	}
	if !errdefs.IsNotFound(err) {
		return img, err
	}
	pulled, err := snapshots.Pull(ctx, b.client, ref, b.o.PlainHTTP, b.o.Progress)
	if err != nil {
		return images.Image{}, fmt.Errorf("not stored here, and %w", err)
	}
	return is.Get(ctx, pulled.Name)
}

// load reads img's layers, diff IDs and history into the builder and
// returns its config.
func (b *builder) load(ctx context.Context, img images.Image) (ocispec.Image, error) {
	mf, err := images.Manifest(ctx, b.cs, img.Target, platforms.Default())
	if err != nil {
		return ocispec.Image{}, err
	}
	var cfg ocispec.Image
	data, err := content.ReadBlob(ctx, b.cs, mf.Config)
	if err != nil {
		return ocispec.Image{}, err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return ocispec.Image{}, err
	}
	if len(cfg.RootFS.DiffIDs) != len(mf.Layers) {
		return ocispec.Image{}, fmt.Errorf("%d layers but %d diff IDs", len(mf.Layers), len(cfg.RootFS.DiffIDs))
	}
	b.layers, b.diffIDs, b.history = mf.Layers, cfg.RootFS.DiffIDs, cfg.History
	return cfg, nil
}

// step runs one instruction: number n of the build's.
func (b *builder) step(ctx context.Context, n int, s Step) error {
	df := b.o.Dockerfile
	fail := func(err error) error { return fmt.Errorf("%s:%d: %s: %w", df.Name, s.Line, s.Text, err) }
	if _, isRun := s.Cmd.(*instructions.RunCommand); !isRun {
		// RUN's words are its shell's to expand, with the ARGs set.
		if err := b.st.expand(s.Cmd); err != nil {
			return fail(err)
		}
	}
	b.progress("[%d/%d] %s", n, b.total, s.Text)
	start := time.Now()
	var cached bool
	var err error
	switch c := s.Cmd.(type) {
	case *instructions.RunCommand:
		cached, err = b.run(ctx, s, c)
	case *instructions.CopyCommand:
		cached, err = b.copy(ctx, s, c.SourcesAndDest, c.Chown)
	case *instructions.AddCommand:
		cached, err = b.copy(ctx, s, c.SourcesAndDest, c.Chown)
	case *instructions.WorkdirCommand:
		cached, err = b.workdir(ctx, s, c)
	default:
		err = b.meta(c, s.Text)
		b.key = stepKey(b.key, s.Text, sortedEnv(b.st.expandEnv()))
		return err
	}
	if err != nil {
		var se *StepError
		if errors.As(err, &se) {
			return err
		}
		return fail(err)
	}
	b.res.Steps++
	if cached {
		b.res.Cached++
		b.progress("[%d/%d] CACHED", n, b.total)
	} else {
		b.progress("[%d/%d] done in %.1fs", n, b.total, time.Since(start).Seconds())
	}
	return nil
}

// meta applies an instruction that changes the config alone.
func (b *builder) meta(cmd instructions.Command, text string) error {
	st := b.st
	switch c := cmd.(type) {
	case *instructions.EnvCommand:
		st.setEnv(c)
	case *instructions.ArgCommand:
		st.declare(c, b.o.BuildArgs)
	case *instructions.LabelCommand:
		for _, kv := range c.Labels {
			st.config.Labels[kv.Key] = kv.Value
		}
	case *instructions.UserCommand:
		u, err := numericUser(c.User)
		if err != nil {
			return err
		}
		st.config.User, st.stepUser = u, u
	case *instructions.CmdCommand:
		st.config.Cmd = runArgv(c.ShellDependantCmdLine)
	case *instructions.EntrypointCommand:
		st.config.Entrypoint = runArgv(c.ShellDependantCmdLine)
	default:
		return fmt.Errorf("%s is not supported", cmd.Name())
	}
	b.history = append(b.history, ocispec.History{CreatedBy: text, EmptyLayer: true})
	return nil
}
