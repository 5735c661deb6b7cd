package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxer-dev/boxer/snapshots"
	"github.com/containerd/log"
)

// pool keeps sandboxes prepared ahead of requests ("warm"): container and
// task created and started, namespaces, mounts and cgroup made, the code
// directory and workspace empty, stdin a pipe, and the program held by a gate
// until its request's first line of stdin (see gated). A request with a preset's default limits
// takes one, fills it and starts it; each sandbox serves one request only.
type pool struct {
	ready  map[string]chan *sandbox // by language
	plans  map[string]plan
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	taken  atomic.Int64

	// Background work (refills, teardowns) yields to running requests: on
	// two cores a sandbox being made or removed slows the request next to
	// it by half. busy counts the runs under way, started all runs ever.
	mu      sync.Mutex
	busy    int
	started atomic.Int64
	pending atomic.Int64 // teardowns waiting for a quiet moment
	waiting atomic.Int64 // requests waiting for a warm sandbox
}

const (
	// settleTime is how long no run must have started before background
	// work goes ahead.
	settleTime = 20 * time.Millisecond
	// maxPendingTeardowns bounds the finished sandboxes that wait for a
	// quiet moment; beyond it they are removed at once.
	maxPendingTeardowns = 8
	// warmWait is how long a request waits for a warm sandbox when none
	// is ready before it makes its own.
	warmWait = time.Second
)

// enter and leave bracket a run.
func (p *pool) enter() {
	p.mu.Lock()
	p.busy++
	p.mu.Unlock()
	p.started.Add(1)
}

func (p *pool) leave() {
	p.mu.Lock()
	p.busy--
	p.mu.Unlock()
}

// settle waits until no run is under way and none has started for
// settleTime, until urgent says the work cannot wait, or until ctx ends.
func (p *pool) settle(ctx context.Context, urgent func() bool) {
	tick := time.NewTicker(settleTime / 4)
	defer tick.Stop()
	var quietSince time.Time
	var n int64
	for ctx.Err() == nil && !urgent() {
		p.mu.Lock()
		idle := p.busy == 0
		p.mu.Unlock()
		switch started := p.started.Load(); {
		case !idle || quietSince.IsZero() || started != n:
			quietSince, n = time.Now(), started
			if !idle {
				quietSince = time.Time{}
			}
		case time.Since(quietSince) >= settleTime:
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// StartPool keeps size warm sandboxes for each of langs (default limits;
// "python" on runc, "python:runsc" on gVisor) until Close. Runs that fit one start faster; others run cold.
func (r *Runner) StartPool(ctx context.Context, langs []string, size int) error {
	if size < 1 || len(langs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &pool{ready: map[string]chan *sandbox{}, plans: map[string]plan{}, ctx: ctx, cancel: cancel}
	for _, entry := range langs {
		lang, runtime, _ := strings.Cut(entry, ":")
		pl, err := r.plan(Request{Lang: lang, Runtime: runtime})
		if err != nil {
			cancel()
			return err
		}
		if _, dup := p.plans[poolKey(pl.req)]; dup {
			continue
		}
		rootfs, err := snapshots.Resolve(ctx, r.client, pl.image)
		if err != nil {
			cancel()
			return fmt.Errorf("warm pool for %s: %w", entry, err)
		}
		// Two fillers use both cores of a small host when requests wait;
		// each blocks on a full channel holding one more in hand.
		fillers := min(size, 2)
		ch := make(chan *sandbox, size-fillers)
		p.ready[poolKey(pl.req)], p.plans[poolKey(pl.req)] = ch, pl
		for range fillers {
			p.wg.Add(1)
			go r.fill(ctx, p, ch, pl, rootfs)
		}
	}
	r.pool = p
	return nil
}

func (r *Runner) fill(ctx context.Context, p *pool, ch chan *sandbox, pl plan, rootfs snapshots.Rootfs) {
	defer p.wg.Done()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Make the next sandbox when no request is running, or at once
		// when a request waits for one.
		p.settle(ctx, func() bool { return p.waiting.Load() > 0 })
		sb, err := r.prepare(ctx, newID(), pl, rootfs, true)
		if err == nil {
			sb.lateCleanup = true
		}
		if err != nil {
			log.G(ctx).WithError(err).Warn("preparing a warm sandbox")
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		select {
		case ch <- sb:
		case <-ctx.Done():
			if err := sb.destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warn("removing a warm sandbox")
			}
		}
	}
}

// poolKey names a pool: a language on a runtime.
func poolKey(q Request) string { return q.Lang + ":" + q.Runtime }

// take returns a warm sandbox for p, filled with p's code and files, or nil
// when p needs a sandbox of its own (other limits, image, environment, ...)
// or none is ready.
func (r *Runner) take(ctx context.Context, p plan) *sandbox {
	if r.pool == nil {
		return nil
	}
	key := poolKey(p.req)
	def, ok := r.pool.plans[key]
	q, d := p.req, def.req
	if !ok || q.Image != "" || len(q.Env) > 0 || q.Seccomp != nil || q.Runtime != d.Runtime ||
		q.UID != d.UID || q.GID != d.GID || q.MemoryBytes != d.MemoryBytes || q.CPUs != d.CPUs ||
		q.Pids != d.Pids || q.TmpBytes != d.TmpBytes || q.Stdout != nil || q.Stderr != nil {
		return nil
	}
	var sb *sandbox
	select {
	case sb = <-r.pool.ready[key]:
	default:
		// None ready: a filler is making one, which is done sooner than a
		// sandbox of our own would be (and does not compete with it).
		t := time.NewTimer(warmWait)
		defer t.Stop()
		r.pool.waiting.Add(1)
		defer r.pool.waiting.Add(-1)
		select {
		case sb = <-r.pool.ready[key]:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	r.pool.taken.Add(1)
	if err := sb.fill(p); err != nil {
		log.L.WithError(err).Warn("filling a warm sandbox")
		_ = sb.destroy(context.Background())
		return nil
	}
	return sb
}

// fill puts p's code, files and output limit into a warm sandbox.
func (sb *sandbox) fill(p plan) error {
	for name, content := range p.support {
		if err := os.WriteFile(filepath.Join(sb.codeDir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(sb.codeDir, p.file), p.code, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(sb.codeDir, 0o555); err != nil {
		return err
	}
	sb.stdout.setLimit(p.req.OutputLimit)
	sb.stderr.setLimit(p.req.OutputLimit)
	return fillWorkspace(sb.workspace, p.req)
}

// closePool stops the fillers and removes every warm sandbox.
func (r *Runner) closePool() {
	p := r.pool
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
	for _, ch := range p.ready {
		for {
			select {
			case sb := <-ch:
				if err := sb.destroy(context.Background()); err != nil {
					log.L.WithError(err).Warn("removing a warm sandbox")
				}
				continue
			default:
			}
			break
		}
	}
}

// WarmRuns counts the runs that took a warm sandbox.
func (r *Runner) WarmRuns() int64 {
	if r.pool == nil {
		return 0
	}
	return r.pool.taken.Load()
}
