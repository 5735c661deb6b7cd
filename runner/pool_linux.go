package runner

import (
	"context"
	"fmt"
	"strings"
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
	ready  map[contract.Shape]chan *sandbox
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

// busy marks a run under way until the function it returns is called.
func (r *Runner) busy() func() {
	if r.pool == nil {
		return func() {}
	}
	r.pool.enter()
	return r.pool.leave
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
func (r *Runner) StartPool(ctx context.Context, langs []string, size int, max contract.Maxima) error {
	if size < 1 || len(langs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &pool{ready: map[contract.Shape]chan *sandbox{}, ctx: ctx, cancel: cancel}
	for _, entry := range langs {
		req, err := poolRequest(entry, max)
		if err != nil {
			cancel()
			return err
		}
		if _, dup := p.ready[req.Shape()]; dup {
			continue
		}
		rootfs, err := snapshots.Resolve(ctx, r.Containerd, req.ImageName())
		if err != nil {
			cancel()
			return fmt.Errorf("pre-created sandboxes for %s: %w", entry, err)
		}
		// Two fillers use both cores of a small host when requests wait;
		// each blocks on a full channel holding one more in hand.
		fillers := min(size, 2)
		ch := make(chan *sandbox, size-fillers)
		p.ready[req.Shape()] = ch
		for range fillers {
			p.wg.Add(1)
			go r.fill(ctx, p, ch, req, rootfs)
		}
	}
	r.pool = p
	return nil
}

// fill makes sandboxes shaped for req, one after the other, as long as
// there is room in ch.
func (r *Runner) fill(ctx context.Context, p *pool, ch chan *sandbox, req contract.Request, rootfs snapshots.Rootfs) {
	defer p.wg.Done()
	var backoff retryBackoff
	for ctx.Err() == nil {
		// Make the next sandbox when no request is running, or at once
		// when a request waits for one.
		p.settle(ctx, func() bool { return p.waiting.Load() > 0 })
		sb := r.newSandbox(box.NewID(), req, true)
		if err := sb.Make(ctx, rootfs); err != nil {
			log.G(ctx).WithError(err).Warn("pre-creating a sandbox")
			if err := sb.destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
			}
			backoff.wait(ctx)
			continue
		}
		backoff.reset()
		select {
		case ch <- sb:
		case <-ctx.Done():
			if err := sb.destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
			}
		}
	}
}

// take returns a pre-created sandbox of req's shape, or nil when there is
// none of that shape or none comes within warmWait.
func (r *Runner) take(ctx context.Context, req contract.Request) *sandbox {
	if r.pool == nil {
		return nil
	}
	ch, ok := r.pool.ready[req.Shape()]
	if !ok {
		return nil
	}
	var sb *sandbox
	select {
	case sb = <-ch:
		if sb.member != nil && r.shims.isDead(sb.member) {
			// Its shared shim died while it waited, and its program
			// with it: removed, and the next one taken (or made).
			r.cleanups.Add(1)
			go func() {
				defer r.cleanups.Done()
				r.pool.teardown(ctx, sb)
			}()
			return r.take(ctx, req)
		}
	default:
		// None ready: a filler is making one, which is done sooner than a
		// sandbox of our own would be (and does not compete with it).
		t := time.NewTimer(warmWait)
		defer t.Stop()
		r.pool.waiting.Add(1)
		defer r.pool.waiting.Add(-1)
		select {
		case sb = <-ch:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	r.pool.taken.Add(1)
	sb.pooled = true
	return sb
}

// teardown destroys a used pre-created sandbox when the host is quiet,
// unless too many wait for that already.
func (p *pool) teardown(ctx context.Context, sb *sandbox) {
	if p.pending.Add(1) <= maxPendingTeardowns {
		p.settle(p.ctx, func() bool { return false })
	}
	defer p.pending.Add(-1)
	if err := sb.destroy(ctx); err != nil {
		log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
	}
}

// closePool stops the fillers and removes every pre-created sandbox.
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
func (r *Runner) WarmRuns() int64 {
	if r.pool == nil {
		return 0
	}
	return r.pool.taken.Load()
}

// poolRequest is the request a warm entry's sandboxes are shaped for:
// LANG[:RUNTIME][:net]. A ":net" sandbox has a link; the operator's
// allowlist stands in for the request's until its own is delivered.
func poolRequest(entry string, max contract.Maxima) (contract.Request, error) {
	parts := strings.Split(entry, ":")
	req := contract.Request{Lang: parts[0]}
	for _, p := range parts[1:] {
		switch {
		case p == "net":
			if len(max.AllowHosts) == 0 {
				return req, contract.FieldErr(contract.FieldAllowHosts, "is empty: warm entry %q needs the operator's --allow-host", entry)
			}
			req.AllowHosts = max.AllowHosts
		case req.Runtime == "":
			req.Runtime = p
		default:
			return req, contract.FieldErr(contract.FieldLang, "warm entry %q must be LANG[:RUNTIME][:net]", entry)
		}
	}
	return req.NormalizeWithin(max)
}

// retryBackoff spaces the attempts of a background maker that failed:
// 100 ms after a first failure, doubling up to 10 s, from 100 ms again
// once one succeeds.
type retryBackoff struct{ next time.Duration }

// wait sleeps for the next interval, or until ctx ends.
func (b *retryBackoff) wait(ctx context.Context) {
	d := max(b.next, 100*time.Millisecond)
	b.next = min(2*d, 10*time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// reset starts the intervals again from 100 ms.
func (b *retryBackoff) reset() { b.next = 0 }
