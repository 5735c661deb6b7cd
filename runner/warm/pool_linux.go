package warm

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"github.com/boxer-dev/boxer/snapshots"
	"github.com/containerd/log"
)

// pool keeps sandboxes made ahead of requests ("pre-created", or warm):
// created, and started with their program held by boxer-init's gate (-g),
// with an empty code directory and workspace. A request of the same Shape
// takes one, delivers its code and files and lets the program go; each
// serves one request only and is torn down after it.
type pool struct {
	ready  map[contract.Shape]chan *Sandbox
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
	waiting atomic.Int64 // requests waiting for a pre-created sandbox
}

const (
	// settleTime is how long no run must have started before background
	// work goes ahead.
	settleTime = 20 * time.Millisecond
	// maxPendingTeardowns bounds the finished sandboxes that wait for a
	// quiet moment; beyond it they are removed at once.
	maxPendingTeardowns = 8
	// warmWait is how long a request waits for a pre-created sandbox when
	// none is ready before it makes its own.
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

// Busy marks a run under way until the function it returns is called.
func (w *Warm) Busy() func() {
	if w.pool == nil {
		return func() {}
	}
	w.pool.enter()
	return w.pool.leave
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

// StartPool keeps size pre-created sandboxes for each entry of langs
// ("python" on runc, "python:runsc" on gVisor, either with ":net" for
// sandboxes with a link out, which requests with allow_hosts take: their
// allowlist is delivered) until Close, shaped for a request of that
// language whose limits are the defaults within max (the limits a server
// gives a request that sets none). Requests of another shape run cold.
func (w *Warm) StartPool(ctx context.Context, langs []string, size int, max contract.Maxima) error {
	if size < 1 || len(langs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &pool{ready: map[contract.Shape]chan *Sandbox{}, ctx: ctx, cancel: cancel}
	for _, entry := range langs {
		req, err := contract.WarmRequest(entry, max)
		if err != nil {
			cancel()
			return err
		}
		if _, dup := p.ready[req.Shape()]; dup {
			continue
		}
		rootfs, err := snapshots.Resolve(ctx, w.Containerd, req.ImageName())
		if err != nil {
			cancel()
			return fmt.Errorf("pre-created sandboxes for %s: %w", entry, err)
		}
		// Two fillers use both cores of a small host when requests wait;
		// each blocks on a full channel holding one more in hand.
		fillers := min(size, 2)
		ch := make(chan *Sandbox, size-fillers)
		p.ready[req.Shape()] = ch
		for range fillers {
			p.wg.Add(1)
			go w.fill(ctx, p, ch, req, rootfs)
		}
	}
	w.pool = p
	return nil
}

// fill makes sandboxes shaped for req, one after the other, as long as
// there is room in ch.
func (w *Warm) fill(ctx context.Context, p *pool, ch chan *Sandbox, req contract.Request, rootfs snapshots.Rootfs) {
	defer p.wg.Done()
	var backoff box.RetryBackoff
	for ctx.Err() == nil {
		// Make the next sandbox when no request is running, or at once
		// when a request waits for one.
		p.settle(ctx, func() bool { return p.waiting.Load() > 0 })
		sb := w.NewSandbox(box.NewID(), req, true)
		if err := sb.Make(ctx, rootfs); err != nil {
			log.G(ctx).WithError(err).Warn("pre-creating a sandbox")
			if err := sb.Destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
			}
			backoff.Wait(ctx)
			continue
		}
		backoff.Reset()
		select {
		case ch <- sb:
		case <-ctx.Done():
			if err := sb.Destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
			}
		}
	}
}

// Take returns a pre-created sandbox of req's shape, or nil when there is
// none of that shape or none comes within warmWait.
func (w *Warm) Take(ctx context.Context, req contract.Request) *Sandbox {
	if w.pool == nil {
		return nil
	}
	ch, ok := w.pool.ready[req.Shape()]
	if !ok {
		return nil
	}
	var sb *Sandbox
	select {
	case sb = <-ch:
		if sb.member != nil && w.shims.isDead(sb.member) {
			// Its shared shim died while it waited, and its program
			// with it: removed, and the next one taken (or made).
			w.cleanups.Add(1)
			go func() {
				defer w.cleanups.Done()
				w.pool.teardown(ctx, sb)
			}()
			return w.Take(ctx, req)
		}
	default:
		// None ready: a filler is making one, which is done sooner than a
		// sandbox of our own would be (and does not compete with it).
		t := time.NewTimer(warmWait)
		defer t.Stop()
		w.pool.waiting.Add(1)
		defer w.pool.waiting.Add(-1)
		select {
		case sb = <-ch:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	w.pool.taken.Add(1)
	sb.pooled = true
	return sb
}

// Settle waits, when there is a pool, until no run is under way and none
// has started for settleTime, or until ctx ends: work in the background
// of the layers above (a ready session's making) yields to runs as the
// pool's does.
func (w *Warm) Settle(ctx context.Context) {
	if w.pool != nil {
		w.pool.settle(ctx, func() bool { return false })
	}
}

// teardown destroys a used pre-created sandbox when the host is quiet,
// unless too many wait for that already.
func (p *pool) teardown(ctx context.Context, sb *Sandbox) {
	if p.pending.Add(1) <= maxPendingTeardowns {
		p.settle(p.ctx, func() bool { return false })
	}
	defer p.pending.Add(-1)
	if err := sb.Destroy(ctx); err != nil {
		log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
	}
}

// closePool stops the fillers and removes every pre-created sandbox.
func (w *Warm) closePool() {
	p := w.pool
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
	for _, ch := range p.ready {
		for {
			select {
			case sb := <-ch:
				if err := sb.Destroy(context.Background()); err != nil {
					log.L.WithError(err).Warnf("removing sandbox %s", sb.ID)
				}
				continue
			default:
			}
			break
		}
	}
}

// WarmRuns counts the runs that took a pre-created sandbox.
func (w *Warm) WarmRuns() int64 {
	if w.pool == nil {
		return 0
	}
	return w.pool.taken.Load()
}
