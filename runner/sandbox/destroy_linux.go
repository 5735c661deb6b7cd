package sandbox

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"golang.org/x/sys/unix"
)

// Destroy removes everything the sandbox is, from whatever state it is in:
// task (killed if it still runs), container, its link, run directory and
// workspace, a cgroup a runtime left, and its user namespace's block of
// ids. It knows nothing of what the layers above made of it (a session's
// link and checkpoint, a shared shim's record, a member's anchor): each
// undoes its own before or after. It uses a fresh bounded context (the
// caller's may be cancelled) and is idempotent.
func (sb *Sandbox) Destroy(ctx context.Context) error {
	if sb.state == StateDestroyed {
		return nil
	}
	sb.state = StateDestroyed
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reaper.CleanupTimeout)
	defer cancel()
	var errs []error
	if sb.Gone != nil {
		close(sb.Gone)
		sb.StdinW.Close()
	}
	// The network link goes while the container does: deleting its host
	// end waits tens of milliseconds for the kernel, as long as deleting a
	// task. Its host end goes first, so nothing the sandbox may still send
	// gets past a table that is gone.
	var linkErr chan error
	if sb.Link != nil {
		linkErr = make(chan error, 1)
		go func() {
			_, err := sb.Link.Remove()
			linkErr <- err
		}()
	}
	if sb.Container != nil {
		task := sb.Task
		if task != nil && sb.ended {
			task = endedTask{task, sb.h.Containerd}
		}
		if err := removeContainer(cctx, sb.Container, task); err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", sb.ID, err))
		}
	}
	if linkErr != nil {
		if err := <-linkErr; err != nil {
			errs = append(errs, fmt.Errorf("removing the sandbox's network link: %w", err))
		}
	}
	if err := reaper.RemoveRunDir(sb.RunDir); err != nil {
		errs = append(errs, fmt.Errorf("removing run directory: %w", err))
	}
	if err := cgroups.Destroy(sb.h.Cgroups, reaper.CgroupsPath(sb.h.Namespace, sb.ID), cgroupGrace); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		// Its processes are gone, and with its run directory the bind
		// mount of its namespace: its block of ids may serve another.
		// Else the reaper's sweep returns it once the directory is gone.
		if err := sb.h.ReleaseUserns(sb.RunDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgroupGrace is how long Destroy waits for a sandbox's cgroup to empty
// once its task is gone, killing what is left in it: a runtime's helpers
// (gVisor's), or the processes of a sandbox whose shared shim died.
const cgroupGrace = 2 * time.Second

// endedTask is a task whose process boxer saw exit. Its Delete skips what
// containerd's client asks first, the task's status (a round trip to
// containerd and from there to the shim), to refuse a task that runs: this
// one does not. Should containerd refuse it anyway, the client's Delete
// tells why.
type endedTask struct {
	containerd.Task
	client *containerd.Client
}

func (t endedTask) Delete(ctx context.Context, opts ...containerd.ProcessDeleteOpts) (*containerd.ExitStatus, error) {
	if len(opts) > 0 {
		return t.Task.Delete(ctx, opts...)
	}
	// As the client's Delete: the streams' copying ends first, and the
	// streams are closed once the task is gone.
	cio := t.IO()
	if cio != nil {
		cio.Cancel()
		cio.Wait()
	}
	if _, err := t.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: t.ID()}); err != nil {
		if err = errgrpc.ToNative(err); errdefs.IsNotFound(err) {
			return nil, err
		}
		return t.Task.Delete(ctx)
	}
	if cio != nil {
		cio.Close()
	}
	return nil, nil
}

// removeContainer removes a container's task (killing what still runs) and
// the container, tolerating either being gone already. task is the one boxer
// holds, if any (it spares a round trip to the shim); else it is loaded.
func removeContainer(ctx context.Context, c containerd.Container, task containerd.Task) error {
	var errs []error
	var err error
	if task == nil {
		task, err = c.Task(ctx, nil)
	}
	if err == nil {
		if _, err = task.Delete(ctx); errdefs.IsFailedPrecondition(err) {
			// Still running, or created and never started: kill everything
			// in it, wait, delete.
			if statusC, werr := task.Wait(ctx); werr == nil {
				st, err := task.Status(ctx)
				if err == nil && (st.Status == containerd.Paused || st.Status == containerd.Pausing) {
					// A paused session's: gVisor holds a signal to a
					// paused sandbox until it is resumed.
					_ = task.Resume(ctx)
				}
				if err == nil && st.Status == containerd.Created && task.Pid() > 0 {
					// Never started: runsc cannot signal a container with no
					// process yet, and its task's process — the sandbox's
					// own, a child of the shim, unreaped until it exits — is
					// ours to end (for runc it is runc init).
					_ = unix.Kill(int(task.Pid()), unix.SIGKILL)
				} else {
					_ = task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll)
				}
				select {
				case <-statusC:
				case <-ctx.Done():
				}
			}
			_, err = task.Delete(ctx)
		}
		if err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting task: %w", err))
		}
	} else if !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("loading task: %w", err))
	}
	if err := c.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting container: %w", err))
	}
	return errors.Join(errs...)
}
