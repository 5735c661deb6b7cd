package reaper

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
)

// Config says where a reaper looks and how it removes a sandbox.
type Config struct {
	Client *containerd.Client
	// Namespace and Address are containerd's, as the sandboxes' shims
	// know them.
	Namespace string
	Address   string
	// Runs is the directory of run directories; State is boxer's state
	// directory (where the runsc wrapper lives).
	Runs  string
	State string
	// Bundles is containerd's task bundle directory and Shim the runc
	// shim's binary, where known (boxer's private daemon): without them
	// the sweep only removes runtime state and cgroups.
	Bundles string
	Shim    string
	// Runc is the runc the shim runs, which deletes what is left of a
	// runc container.
	Runc    string
	Cgroups cgroups.Mode
	// Destroy removes one sandbox container, its task and its run
	// directory: the runner's one teardown route.
	Destroy func(ctx context.Context, c containerd.Container) error
	// Exited, if set, says why session id ended when its sandbox stopped
	// on its own (EndExited, or what its maker knows better: its process
	// server's end).
	Exited func(id string) string
	// After, if set, runs at the end of the pass (the runner sweeps what
	// is left of removed sandboxes' network links).
	After func(ctx context.Context)
}

// Reaper is one pass over the leftovers, under way in the background.
type Reaper struct {
	done chan struct{}
}

// Start removes, in the background, sandboxes whose boxer process is gone
// (killed with SIGKILL, or its machine lost power): their containers,
// tasks, run directories and whatever containerd lost of them.
func Start(ctx context.Context, cfg Config) *Reaper {
	r := &Reaper{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		cfg.reap(context.WithoutCancel(ctx))
	}()
	return r
}

// Wait waits for the pass to end (at most CleanupTimeout after Start).
func (r *Reaper) Wait() {
	if r != nil {
		<-r.done
	}
}

func (cfg Config) reap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
	defer cancel()
	containers, err := cfg.Client.Containers(ctx, `labels."`+LabelSandbox+`"==true`)
	if err != nil {
		log.G(ctx).WithError(err).Debug("listing sandboxes to reap")
		return
	}
	var leftovers []string
	for _, c := range containers {
		labels, err := c.Labels(ctx)
		if err != nil {
			continue
		}
		if _, ok := labels[LabelSession]; ok {
			reason := cfg.sessionEnd(ctx, c, labels)
			if reason == "" {
				continue
			}
			if reason == EndExited && cfg.Exited != nil {
				reason = cfg.Exited(c.ID())
			}
			if _, err := MarkEnding(ctx, c, reason); err != nil {
				continue // gone meanwhile, or containerd fails: the next pass
			}
			RecordEnded(cfg.State, cfg.Namespace, c.ID(), labels[LabelSession], reason)
		} else if Alive(labels[LabelOwner]) || Alive(RunDirOwner(filepath.Join(cfg.Runs, c.ID()))) {
			// Its boxer lives, or the one its boxer handed it to.
			continue
		}
		created := taskCreated(ctx, c)
		if err := cfg.Destroy(ctx, c); err != nil {
			// What it left is the sweep's: a task creation its boxer's
			// death cut short, on a shim that lives on (a shared one),
			// can leave processes in its cgroup that no task owns.
			log.G(ctx).WithError(err).Debugf("reaping sandbox %s", c.ID())
			leftovers = append(leftovers, c.ID())
			continue
		}
		if !created || labels[LabelAnchor] == "true" {
			// An anchor's shim may still hold a member whose task
			// creation its boxer's death cut short, lost to containerd
			// (seen: a server killed while it filled its warm pool): the
			// sweep ends it.
			leftovers = append(leftovers, c.ID())
		}
	}
	leftovers = append(leftovers, cfg.reapOrphanTasks(ctx)...)
	// Only a sandbox whose task was not fully made when its boxer died, or
	// whose removal failed, can have parts containerd lost (see sweep).
	if len(leftovers) > 0 {
		cfg.sweep(ctx, leftovers)
	}
	cfg.reapRecords(ctx)
	cfg.reapRunscDebris(ctx)
	cfg.reapLostShims(ctx)
	// Run directories of runs that died before their container existed.
	entries, _ := os.ReadDir(cfg.Runs)
	for _, e := range entries {
		if ctx.Err() != nil {
			// Out of time: an answer from containerd now would be the
			// context's error, not "no such container".
			break
		}
		dir := filepath.Join(cfg.Runs, e.Name())
		if ns := RunDirNamespace(dir); ns != "" && ns != cfg.Namespace {
			continue // another namespace's: its container is not ours to look up
		}
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		var age time.Duration
		if info, serr := e.Info(); serr == nil {
			age = time.Since(info.ModTime())
		}
		switch runDirVerdict(owner, err, age) {
		case removeDir:
			_ = RemoveRunDir(dir)
		case removeUnlessContainer:
			// Only containerd's "no such container": a live session's
			// directory must survive a slow or failed answer.
			if _, err := cfg.Client.LoadContainer(ctx, e.Name()); errdefs.IsNotFound(err) {
				_ = RemoveRunDir(dir)
			}
		}
	}
	cfg.reapLocks(ctx)
	if cfg.After != nil {
		cfg.After(ctx)
	}
}

// sessionEnd says why session c is over and the reaper's to remove, ""
// if it is not. A verdict on labels is taken again on labels read
// afterwards (its maker may have let go of it and exited meanwhile: see
// SessionEnd), and a session a live process removes is left to it.
func (cfg Config) sessionEnd(ctx context.Context, c containerd.Container, labels map[string]string) string {
	end := func(labels map[string]string) string {
		return SessionEnd(labels, LastUsed(labels, filepath.Join(cfg.Runs, c.ID())), time.Now(), func() bool { return TaskRunning(ctx, c) })
	}
	if end(labels) == "" {
		return ""
	}
	fresh, err := c.Labels(ctx)
	if err != nil {
		return ""
	}
	if _, ok := BeingEnded(fresh); ok {
		return ""
	}
	return end(fresh)
}

// MarkEnding labels session c as being removed by this process, for
// reason (see LabelSessionEnding), before anything of it is removed, and
// returns its labels after the update.
func MarkEnding(ctx context.Context, c containerd.Container, reason string) (map[string]string, error) {
	return c.SetLabels(ctx, map[string]string{LabelSessionEnding: reason, LabelSessionEnder: Self()})
}

// reapOrphanTasks removes boxer's tasks whose container is gone, and
// returns their IDs for the sweep. boxer deletes a task before its
// container, and containerd makes a task only for a container that
// exists; so a task still listed after its container was found gone (the
// list can predate a removal that took both) is a leftover. containerd's
// client deletes a container whose task it failed to load, not only one
// it found gone, which leaves the task, its shim and its sandbox visible
// to no label (seen: a gVisor sandbox of a stopping server's pool; a
// standby claimed while its task was being made, before standbys were
// labelled only once ready). containerd deletes a task only through its
// container, so a bare record with the task's ID (labelled a sandbox of no
// one, for the next pass should this one stop halfway) stands in for it
// while Destroy removes both.
func (cfg Config) reapOrphanTasks(ctx context.Context) []string {
	resp, err := cfg.Client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		log.G(ctx).WithError(err).Debug("listing tasks to reap")
		return nil
	}
	var ids []string
	for _, t := range resp.Tasks {
		if !strings.HasPrefix(t.ID, "bx") {
			continue // not a sandbox boxer made
		}
		if _, err := cfg.Client.LoadContainer(ctx, t.ID); !errdefs.IsNotFound(err) {
			continue
		}
		// A sandbox being removed meanwhile lost its task before its
		// container: a task still listed now has truly lost its container.
		// (Get would look the container up first.)
		if !cfg.taskListed(ctx, t.ID) {
			continue
		}
		c, err := cfg.Client.NewContainer(ctx, t.ID, containerd.WithSpec(&oci.Spec{}),
			containerd.WithContainerLabels(map[string]string{LabelSandbox: "true"}))
		if err != nil {
			log.G(ctx).WithError(err).Debugf("reaping task %s: standing in for its container", t.ID)
			continue
		}
		log.G(ctx).Debugf("reaping task %s, whose container is gone", t.ID)
		if err := cfg.Destroy(ctx, c); err != nil {
			log.G(ctx).WithError(err).Debugf("reaping task %s", t.ID)
		}
		ids = append(ids, t.ID)
	}
	return ids
}

// taskListed says whether containerd lists a task of that ID.
func (cfg Config) taskListed(ctx context.Context, id string) bool {
	resp, err := cfg.Client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return false
	}
	for _, t := range resp.Tasks {
		if t.ID == id {
			return true
		}
	}
	return false
}

// reapRecords removes the sandbox records of dead boxers' shared shims
// (see LabelAnchor): their anchors are removed by now, or were never made.
// A containerd before 2.0 has no sandbox store, and boxer made no record.
func (cfg Config) reapRecords(ctx context.Context) {
	store := cfg.Client.SandboxStore()
	recs, err := store.List(ctx, `labels."`+LabelSandbox+`"==true`)
	if err != nil {
		log.G(ctx).WithError(err).Debug("listing sandbox records to reap")
		return
	}
	for _, rec := range recs {
		if Alive(rec.Labels[LabelOwner]) {
			continue
		}
		if err := store.Delete(ctx, rec.ID); err != nil && !errdefs.IsNotFound(err) {
			log.G(ctx).WithError(err).Warnf("reaping sandbox record %s", rec.ID)
		}
	}
}

// reapLocks removes the standby locks (leases) of dead boxer processes,
// and any held longer than LockStale: a lock is held for a moment; and
// the container leases of dead boxer processes.
func (cfg Config) reapLocks(ctx context.Context) {
	ls := cfg.Client.LeasesService()
	held, err := ls.List(ctx, `labels."`+LabelOwner+`"`)
	if err != nil {
		log.G(ctx).WithError(err).Debug("listing locks to reap")
		return
	}
	for _, l := range held {
		if strings.HasPrefix(l.ID, ContainerLeasePrefix) {
			if Alive(l.Labels[LabelOwner]) {
				continue
			}
		} else if !strings.HasPrefix(l.ID, ClaimLeasePrefix) && !strings.HasPrefix(l.ID, StandbyLeasePrefix) {
			continue
		} else if Alive(l.Labels[LabelOwner]) && time.Since(l.CreatedAt) < LockStale {
			continue
		}
		if err := ls.Delete(ctx, l); err != nil {
			log.G(ctx).WithError(err).Debugf("reaping lock %s", l.ID)
		}
	}
}

// TaskRunning says whether c's task runs, or is paused: a frozen
// sandbox (a paused session) is alive, its processes kept, and so is a
// checkpointed session's, whose task is gone until it is restored, or
// stopped (saved, and not yet deleted by its checkpointer).
func TaskRunning(ctx context.Context, c containerd.Container) bool {
	checkpointed := func() bool {
		labels, lerr := c.Labels(ctx)
		return lerr != nil && !errdefs.IsNotFound(lerr) || labels[LabelSessionCheckpointed] != ""
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return checkpointed()
	}
	if err != nil {
		// Only containerd's "no task" is an answer: an error of the asking
		// (a request cancelled, containerd busy) says nothing of the task,
		// and must not end a session that runs.
		return true
	}
	st, err := task.Status(ctx)
	if err != nil {
		return !errdefs.IsNotFound(err)
	}
	if st.Status == containerd.Stopped {
		return checkpointed()
	}
	return st.Status == containerd.Running || st.Status == containerd.Paused || st.Status == containerd.Pausing
}

// taskCreated says whether c's task was fully made: it has run, or runs.
// No task, or one still in the created state (or whose state containerd
// cannot tell), may be a creation its boxer's death cut short.
func taskCreated(ctx context.Context, c containerd.Container) bool {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return false
	}
	st, err := task.Status(ctx)
	return err == nil && (st.Status == containerd.Running || st.Status == containerd.Stopped || st.Status == containerd.Paused)
}
