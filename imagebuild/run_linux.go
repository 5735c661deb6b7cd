package imagebuild

// RUN: one boxer sandbox on the step's writable snapshot.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
)

// StepCapabilities are what a step's root holds, in its own user
// namespace only: what package managers need to own, chmod and write
// files of any user (CHOWN, DAC_OVERRIDE, FOWNER, FSETID), to drop to
// their own users (SETUID, SETGID: apt's _apt) and to end their children
// (KILL). Not SETFCAP: file capabilities are dropped from every layer
// anyway; nothing of the host's (no SYS_ADMIN, NET_ADMIN, MKNOD).
var StepCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
	"CAP_SETUID", "CAP_SETGID", "CAP_KILL",
}

// tailLines is how much of a failed step's output its error shows.
const tailLines = 15

// run runs a RUN step.
func (b *builder) run(ctx context.Context, s Step, c *instructions.RunCommand) (bool, error) {
	argv := runArgv(c.ShellDependantCmdLine)
	user := b.st.stepUser
	if s.User != "" {
		u, err := numericUser(s.User)
		if err != nil {
			return false, err
		}
		user = u
	}
	env := sandbox.BuildEnv(b.st.argEnv(), b.st.config.Env)
	cwd := b.st.config.WorkingDir
	if cwd == "" {
		cwd = "/"
	}
	what, _ := json.Marshal(struct {
		Argv, Env  []string
		Cwd, User  string
		AllowHosts []string
	}{argv, env, cwd, user, b.o.AllowHosts})
	b.key = stepKey(b.key, "RUN", string(what))
	return b.layerStep(ctx, s.Text, func(ctx context.Context, active, upper string) error {
		return b.sandbox(ctx, s, argv, env, cwd, user, active, upper)
	})
}

// sandbox runs argv as user (uid:gid) in a sandbox whose root is the
// snapshot active, and removes the sandbox whatever happens.
func (b *builder) sandbox(ctx context.Context, s Step, argv, env []string, cwd, user, active, upper string) (retErr error) {
	uid, gid, err := parseChown(user)
	if err != nil {
		return err
	}
	req, err := contract.Request{
		Image: b.base, Args: argv,
		Timeout: b.o.Timeout, MemoryBytes: b.o.MemoryBytes, CPUs: b.o.CPUs, Pids: b.o.Pids, TmpBytes: b.o.TmpBytes,
		UID: uid, GID: gid, UserSet: true, Runtime: b.o.runtime(), AllowHosts: b.o.AllowHosts,
	}.Normalize()
	if err != nil {
		return err
	}
	sb := b.h.NewSandbox(sandbox.NewID(), req, false)
	sb.Parts = stepParts{cwd: cwd}
	var nsPath string
	var base uint32
	if req.Runtime == "runsc" {
		// gVisor's Sentry is the step's kernel, with its own user
		// namespace: its root's writes reach the snapshot through the
		// gofer, as the ids the Sentry gives, once runsc keeps no overlay
		// of its own over the root.
		sb.RunscFlags = []string{sandbox.RunscFlagRootWritten}
	}
	defer func() {
		if err := sb.Destroy(context.WithoutCancel(ctx)); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	if err := sb.Prepare(); err != nil {
		return err
	}
	if u := sb.Dirs.Userns; u != nil {
		nsPath, base = u.Path, u.Base
	} else if req.Runtime != "runsc" {
		return errors.New("a build step on runc needs a user namespace of its own")
	}
	root := reaper.RootDir(sb.RunDir)
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	mounts, err := b.sn.Mounts(ctx, active)
	if err != nil {
		return err
	}
	if err := mountWritable(nsPath, base, mounts, root); err != nil {
		return err
	}
	sb.Dirs.Root = root
	rootfs := snapshots.Rootfs{Image: b.base, Snapshotter: snapshots.Snapshotter, Key: active, Config: ocispec.ImageConfig{Env: env}}
	if err := sb.Create(ctx, rootfs); err != nil {
		return err
	}
	if err := sb.Deliver(req.Delivery()); err != nil {
		return err
	}
	if err := sb.Start(ctx, nil); err != nil {
		return err
	}
	b.res.Ran++
	full := make(chan struct{})
	stop := make(chan struct{})
	go watchDisk(upper, b.o.DiskBytes, sb.Task, full, stop)
	e, err := sb.Wait(ctx, req.Timeout)
	close(stop)
	if err != nil {
		return err
	}
	status := ""
	select {
	case <-full:
		status = fmt.Sprintf("wrote more than the step's disk limit of %d MiB (--disk)", b.o.DiskBytes>>20)
	default:
		switch {
		case e.Facts.TimedOut:
			status = fmt.Sprintf("timed out after %s (--timeout)", req.Timeout)
		case e.Facts.OOMKills > 0:
			status = fmt.Sprintf("killed: out of memory (--memory %d MiB)", req.MemoryBytes>>20)
		case e.Facts.Status != 0:
			status = fmt.Sprintf("exit status %d", e.Facts.Status)
		}
	}
	if status == "" {
		return nil
	}
	out, _ := sb.Stdout.Text()
	errOut, _ := sb.Stderr.Text()
	return &StepError{File: b.o.Dockerfile.Name, Line: s.Line, Text: s.Text, Status: status, Tail: tail(out+errOut, tailLines)}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// watchDisk kills task once the step has written more than limit bytes
// to its layer (upper), looking twice a second until stop; full says it
// did. What a step can write beyond the limit is what it writes in half
// a second.
func watchDisk(upper string, limit int64, task containerd.Task, full, stop chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var used int64
		_ = filepath.WalkDir(upper, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					used += st.Blocks * 512
				}
			}
			return nil
		})
		if used > limit {
			close(full)
			_ = task.Kill(context.Background(), syscall.SIGKILL, containerd.WithKillAll)
			return
		}
	}
}

// stepParts shape a step's sandbox: its root writable (the step's
// snapshot, mounted by the builder), the step's capabilities, its
// working directory, and no /workspace tmpfs over the image's.
type stepParts struct {
	sandbox.NoParts
	cwd string
}

// Shape makes the spec a build step's.
func (p stepParts) Shape(_ *sandbox.Sandbox, spec *specs.Spec, _ map[string]string) error {
	spec.Root.Readonly = false
	spec.Process.Cwd = p.cwd
	caps := append([]string(nil), StepCapabilities...)
	spec.Process.Capabilities = &specs.LinuxCapabilities{
		Bounding: caps, Effective: caps, Permitted: caps,
		Inheritable: []string{}, Ambient: []string{},
	}
	mounts := spec.Mounts[:0]
	for _, m := range spec.Mounts {
		if m.Destination != oci.Workspace {
			mounts = append(mounts, m)
		}
	}
	spec.Mounts = mounts
	return nil
}
