package session

// Ready sessions: sessions a server makes ahead of requests, preloaded, that a matching request claims.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/log"
)

// A ready session is a session made before anyone asks for it
// (docs/sessions.md, "Ready sessions"): its sandbox runs, its interpreter
// has imported its preset's Preload modules, and it stays unmade
// (reaper.LabelSessionReady), its maker's alone: no caller can find, list
// or call it, no cap counts it, and if its maker dies it is reaped like
// any session being made. A request of the same shape (CreateSession with
// Held, no files and preload not refused) claims one: in one label update
// it becomes that caller's, made, with the request's idle timeout and
// lifetime counted from the claim; its record is the request's. It
// serves that caller only, as a fresh session would; the pool makes
// another in the background. One nobody claims is replaced once it is
// its pool's maxAge old (DefaultReadyMaxAge unless the operator says), so that a claimed session is never much older than a
// fresh one (gVisor's /proc/uptime and a process's start time are the
// sandbox's).
//
// The preload is only in ready sessions, not in every session of the
// preset: a cold session's first call would wait for the imports whatever
// it runs (python-data on runc, a busy 2-core host: create and a first
// print(1) 191 ms, with import pandas 729 ms), and a short first timeout
// could cut them. A ready session pays them before the request.

// readyLoadTimeout bounds the preload of a ready session's interpreter.
const readyLoadTimeout = time.Minute

// readyPool keeps the ready sessions of a Layer, by shape.
type readyPool struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	smax   contract.SessionMaxima
	maxAge time.Duration
	shapes map[contract.Shape]*readyShape
	// claimed counts the sessions requests took.
	claimed atomic.Int64
}

// readyShape keeps size ready sessions of one request's shape.
type readyShape struct {
	req  contract.Request
	size int
	mu   sync.Mutex
	// ready are the sessions made, oldest first.
	ready []readySession
	// taken wakes the filler when a session was claimed.
	taken chan struct{}
}

type readySession struct {
	sb   *sandbox
	made time.Time
}

// StartReadySessions keeps size ready sessions for each entry of langs
// ("python-data" on runc, "python-data:runsc"), shaped for a session
// request of that language whose limits are the defaults within max, each
// replaced once it is maxAge old (0: DefaultReadyMaxAge), until Close.
// Sessions of another shape are made when asked for.
func (r *Layer) StartReadySessions(ctx context.Context, langs []string, size int, maxAge time.Duration, max contract.Maxima, smax contract.SessionMaxima) error {
	if size < 1 || len(langs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &readyPool{ctx: ctx, cancel: cancel, smax: smax, maxAge: contract.Or(maxAge, contract.DefaultReadyMaxAge), shapes: map[contract.Shape]*readyShape{}}
	for _, entry := range langs {
		req, err := contract.WarmRequest(entry, max)
		if err == nil && req.HasEgress() {
			err = contract.FieldErr(contract.FieldLang, "ready session entry %q must be LANG[:RUNTIME]: a session with a network is made when asked for", entry)
		}
		if err != nil {
			cancel()
			return err
		}
		if _, err := r.Rootfs(ctx, req); err != nil {
			cancel()
			return fmt.Errorf("ready sessions for %s: %w", entry, err)
		}
		if _, dup := p.shapes[req.Shape()]; dup {
			continue
		}
		p.shapes[req.Shape()] = &readyShape{req: req, size: size, taken: make(chan struct{}, 1)}
	}
	r.ready = p
	for _, rs := range p.shapes {
		p.wg.Add(1)
		go r.fillReady(p, rs)
	}
	return nil
}

// fillReady keeps rs full, replacing each session that grows too old,
// until the pool closes.
func (r *Layer) fillReady(p *readyPool, rs *readyShape) {
	defer p.wg.Done()
	ctx := p.ctx
	var backoff box.RetryBackoff
	for ctx.Err() == nil {
		rs.mu.Lock()
		var old *sandbox
		wait := p.maxAge
		if n := len(rs.ready); n > 0 {
			if age := time.Since(rs.ready[0].made); age >= p.maxAge {
				old, rs.ready = rs.ready[0].sb, rs.ready[1:]
			} else if n >= rs.size {
				wait = p.maxAge - age
			}
		}
		full := len(rs.ready) >= rs.size
		rs.mu.Unlock()
		if old != nil {
			r.destroyReady(ctx, old)
			continue
		}
		if full {
			select {
			case <-ctx.Done():
			case <-rs.taken:
			case <-time.After(wait):
			}
			continue
		}
		// Requests first: on a small host a session being made slows
		// the run next to it.
		r.warm.Settle(ctx)
		sb, err := r.makeReady(ctx, rs.req, p.smax, p.maxAge)
		if err != nil {
			if ctx.Err() == nil {
				log.G(ctx).WithError(err).Warn("making a ready session")
			}
			backoff.Wait(ctx)
			continue
		}
		backoff.Reset()
		rs.mu.Lock()
		rs.ready = append(rs.ready, readySession{sb: sb, made: time.Now()})
		rs.mu.Unlock()
	}
}

// makeReady makes a ready session of req's shape and waits until its
// interpreter has imported its preset's Preload modules.
func (r *Layer) makeReady(ctx context.Context, req contract.Request, smax contract.SessionMaxima, maxAge time.Duration) (_ *sandbox, retErr error) {
	rootfs, err := r.Rootfs(ctx, req)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	sb := r.newSandbox(r.newSessionID(), req, false)
	// Its sandbox lives as long as a session claimed at its oldest may:
	// the claim sets the deadline, within the backstop a fresh one would
	// have.
	backstop := now.Add(contract.Or(smax.Lifetime, contract.DefaultMaxSessionLifetime) + maxAge + time.Minute)
	sb.session = &sessionMeta{held: true, ready: true, created: now, deadline: backstop, backstop: backstop, idle: maxAge}
	if err := sb.session.kind(r, req); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			if err := sb.destroy(ctx); err != nil {
				log.G(ctx).WithError(err).Warnf("removing sandbox %s", sb.ID)
			}
		}
	}()
	if err := sb.Make(ctx, rootfs); err != nil {
		return nil, err
	}
	if err := sb.openSession(ctx); err != nil {
		return nil, err
	}
	if interpreted(req.Lang) && len(req.Preload) > 0 {
		if err := r.preloadDriver(ctx, sb, req.Preload); err != nil {
			return nil, err
		}
	}
	return sb, nil
}

// preloadDriver has the interpreter of session sb import modules (the
// operator's --preload list for its language, or its preset's), and
// waits until it has.
func (r *Layer) preloadDriver(ctx context.Context, sb *sandbox, modules []string) error {
	w, err := r.openWire(ctx, sb.RunDir, sb.ID, sb.session.driver != nil)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Send("load", 0, []byte(strings.Join(modules, ","))); err != nil {
		return fmt.Errorf("preloading the session's interpreter: %w", err)
	}
	frames, done := make(chan keeper.Frame, 1), make(chan struct{})
	defer close(done)
	go w.ReceiveAll(frames, done)
	t := time.NewTimer(readyLoadTimeout)
	defer t.Stop()
	for {
		select {
		case f := <-frames:
			switch {
			case f.Err != nil:
				return fmt.Errorf("preloading the session's interpreter: %w", errors.Join(keeper.ErrWireGone, f.Err))
			case f.Kind == "ready" && f.Call == 0:
				return nil
			}
		case <-t.C:
			return fmt.Errorf("preloading the session's interpreter: no answer in %s", readyLoadTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readyFor says whether sr may take a ready session.
func readyFor(sr contract.SessionRequest) bool {
	return sr.Held && !sr.NoPreload && len(sr.Files) == 0 && sr.CopyIn == ""
}

// claimReady takes a ready session of req's shape for sr, if one is
// there, and makes it sr's: ok is false when there is none (or the one
// taken failed, which it removes), and the session is to be made.
func (r *Layer) claimReady(ctx context.Context, sr contract.SessionRequest, req contract.Request, idle, lifetime time.Duration) (contract.Session, bool) {
	p := r.ready
	if p == nil || !readyFor(sr) {
		return contract.Session{}, false
	}
	rs := p.shapes[req.Shape()]
	if rs == nil {
		return contract.Session{}, false
	}
	for {
		rs.mu.Lock()
		var sb *sandbox
		for sb == nil && len(rs.ready) > 0 {
			// The youngest: the nearest a fresh one.
			last := rs.ready[len(rs.ready)-1]
			rs.ready = rs.ready[:len(rs.ready)-1]
			if time.Since(last.made) < p.maxAge {
				sb = last.sb
			} else {
				r.destroyReadyLater(ctx, last.sb)
			}
		}
		rs.mu.Unlock()
		if sb == nil {
			return contract.Session{}, false
		}
		select {
		case rs.taken <- struct{}{}:
		default:
		}
		s, err := r.claimSession(ctx, sb, sr, req, idle, lifetime, p.smax)
		if err == nil {
			p.claimed.Add(1)
			return s, true
		}
		log.G(ctx).WithError(err).Warnf("claiming ready session %s", sb.ID)
		r.destroyReadyLater(ctx, sb)
	}
}

// claimSession makes ready session sb sr's: its record is req's, its clocks
// start now, and it is made in one label update.
func (r *Layer) claimSession(ctx context.Context, sb *sandbox, sr contract.SessionRequest, req contract.Request, idle, lifetime time.Duration, smax contract.SessionMaxima) (contract.Session, error) {
	opCtx := context.WithoutCancel(ctx)
	// A sandbox that died while it waited (its shim, its interpreter)
	// would end the session at its first call.
	if st, err := sb.Task.Status(opCtx); err != nil || st.Status != containerd.Running {
		return contract.Session{}, fmt.Errorf("its sandbox does not run (%v, %v)", st.Status, err)
	}
	now := time.Now()
	m := sb.session
	rec := sessionRecord{Request: req, Idle: idle, CreatedAt: now, Deadline: now.Add(lifetime), Backstop: now.Add(contract.Or(smax.Lifetime, contract.DefaultMaxSessionLifetime)), SecretEnv: sb.Dirs.SecretEnv, DriverFirst: m.first, ProcServer: m.served, Driver: m.driver}
	data, err := json.Marshal(rec)
	if err != nil {
		return contract.Session{}, err
	}
	if err := reaper.WriteFileAtomic(filepath.Join(sb.RunDir, sessionRecordFile), data, 0o600); err != nil {
		return contract.Session{}, fmt.Errorf("writing session record: %w", err)
	}
	if err := reaper.TouchSession(sb.RunDir, now); err != nil {
		return contract.Session{}, fmt.Errorf("writing session record: %w", err)
	}
	labels, err := sb.Container.SetLabels(opCtx, map[string]string{
		reaper.LabelSessionHeir:     heirOf(sr),
		reaper.LabelSession:         sr.Caller,
		reaper.LabelSessionDeadline: strconv.FormatInt(rec.Deadline.Unix(), 10),
		reaper.LabelSessionIdle:     strconv.FormatInt(int64(idle/time.Second), 10),
		reaper.LabelSessionUsed:     strconv.FormatInt(now.Unix(), 10),
		reaper.LabelSessionReady:    "",
		reaper.LabelSessionMade:     "true",
	})
	if err != nil {
		return contract.Session{}, fmt.Errorf("marking session made: %w", err)
	}
	if reason := labels[reaper.LabelSessionEnding]; reason != "" {
		return contract.Session{}, &contract.SessionEndedError{ID: sb.ID, Reason: reason}
	}
	return sessionInfo(sb.ID, sr.Caller, rec, labels, now), nil
}

// destroyReady removes a ready session nobody claimed.
func (r *Layer) destroyReady(ctx context.Context, sb *sandbox) {
	if err := sb.destroy(context.WithoutCancel(ctx)); err != nil {
		log.G(ctx).WithError(err).Warnf("removing ready session %s", sb.ID)
	}
}

// destroyReadyLater removes a ready session in the background.
func (r *Layer) destroyReadyLater(ctx context.Context, sb *sandbox) {
	r.cleanups.Add(1)
	go func() {
		defer r.cleanups.Done()
		r.destroyReady(ctx, sb)
	}()
}

// CloseReady stops the fillers and removes every ready session.
func (r *Layer) CloseReady() {
	p := r.ready
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
	for _, rs := range p.shapes {
		rs.mu.Lock()
		left := rs.ready
		rs.ready = nil
		rs.mu.Unlock()
		for _, s := range left {
			r.destroyReady(context.Background(), s.sb)
		}
	}
}

// ReadySessions counts the ready sessions waiting, of every shape.
func (r *Layer) ReadySessions() int {
	n := 0
	if r.ready != nil {
		for _, rs := range r.ready.shapes {
			rs.mu.Lock()
			n += len(rs.ready)
			rs.mu.Unlock()
		}
	}
	return n
}

// ReadyClaims counts the sessions requests took ready.
func (r *Layer) ReadyClaims() int64 {
	if r.ready == nil {
		return 0
	}
	return r.ready.claimed.Load()
}
