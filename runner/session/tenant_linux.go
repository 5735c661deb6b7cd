package session

// Counting what each caller holds on the host: its sessions, watches,
// streams and processes (contract/tenant.go), refused past its ceilings.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/boxer-dev/boxer/runner/keeper"
	containerd "github.com/containerd/containerd/v2/client"
)

// inotifyInstances is the kernel's cap on one user's inotify instances,
// 0 if unknown.
func inotifyInstances() int {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return n
}

// HoldStream counts a stream that caller opens (a run's or a call's
// streamed output, a watch's events) against its ceiling, refusing it
// with a LimitError past it; release, when the stream ends, gives it
// back.
func (r *Layer) HoldStream(caller string) (release func(), err error) {
	return r.held.Take(contract.HeldStream, caller, r.ceilings.PerCaller(contract.HeldStream), 0, 0)
}

// holdWatch counts a watch of caller, against its ceiling and the
// server's.
func (r *Layer) holdWatch(caller string) (func(), error) {
	return r.held.Take(contract.HeldWatch, caller, r.ceilings.PerCaller(contract.HeldWatch), 0, r.watches)
}

// holdProcess counts a process of caller while it starts (background),
// or a call in flight, against its ceiling on processes: a start counts
// with them those its sessions' keepers run already (a call does not ask
// them, which would slow every call).
//
// A start counts on a recent count (procCounts) while it is under the
// ceiling: asking every keeper of the caller's sessions costs a request
// to each, for every command. A start refused is refused on a count
// made now.
func (r *Layer) holdProcess(ctx context.Context, caller string, background bool) (func(), error) {
	if caller == "" {
		return func() {}, nil
	}
	per := r.ceilings.PerCaller(contract.HeldProcess)
	if !background {
		return r.held.Take(contract.HeldProcess, caller, per, 0, 0)
	}
	running, recent := r.counted.estimate(caller, time.Now())
	if !recent {
		running = r.runningProcesses(ctx, caller)
		r.counted.set(caller, running, time.Now())
	}
	release, err := r.held.Take(contract.HeldProcess, caller, per, running, 0)
	if err != nil && recent {
		// Some may have ended since: count them now.
		running = r.runningProcesses(ctx, caller)
		r.counted.set(caller, running, time.Now())
		release, err = r.held.Take(contract.HeldProcess, caller, per, running, 0)
	}
	if err != nil {
		return nil, err
	}
	// Released once its keeper counts it: counted from then on.
	return func() {
		release()
		r.counted.started(caller)
	}, nil
}

// procCounts are callers' running background processes as last counted
// from their keepers, with those started since; an ended one stays
// counted until the count is made again (a count never falls short).
type procCounts struct {
	mu sync.Mutex
	m  map[string]procCount
}

type procCount struct {
	at time.Time
	n  int
}

// procCountFresh is how long a count is used.
const procCountFresh = time.Second

// estimate is caller's count, if one was made within procCountFresh.
func (p *procCounts) estimate(caller string, now time.Time) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.m[caller]
	if !ok || now.Sub(c.at) > procCountFresh {
		return 0, false
	}
	return c.n, true
}

// set records caller's count, made at now, and forgets stale ones.
func (p *procCounts) set(caller string, n int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]procCount{}
	}
	for k, c := range p.m {
		if now.Sub(c.at) > procCountFresh {
			delete(p.m, k)
		}
	}
	p.m[caller] = procCount{at: now, n: n}
}

// started adds a process started by caller to its count.
func (p *procCounts) started(caller string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.m[caller]; ok {
		c.n++
		p.m[caller] = c
	}
}

// runningProcesses counts the background processes that run in caller's
// sessions, as their keepers tell.
func (r *Layer) runningProcesses(ctx context.Context, caller string) int {
	cs, err := r.Containerd.Containers(ctx, `labels."`+reaper.LabelSession+`"==`+strconv.Quote(caller))
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	n := 0
	for _, c := range cs {
		sock := filepath.Join(r.RunsDir, c.ID(), keeper.Sock)
		if _, err := os.Stat(sock); err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ps []contract.ProcessInfo
			if keeper.NewClient(sock).Call(ctx, "GET", "/processes", nil, nil, &ps) != nil {
				return
			}
			running := 0
			for _, p := range ps {
				if p.Running {
					running++
				}
			}
			mu.Lock()
			n += running
			mu.Unlock()
		}()
	}
	wg.Wait()
	return n
}

// sessionRoom makes room for n new sessions of caller, refusing them
// past the cap on all sessions or on caller's (the caller "" has none);
// release, once they are made or failed, lets others count them from
// their containers alone. id names the one session, if known.
func (r *Layer) sessionRoom(ctx context.Context, smax contract.SessionMaxima, caller, id string, n int) (release func(), err error) {
	r.roomMu.Lock()
	defer r.roomMu.Unlock()
	cs, err := r.Containerd.Containers(ctx, `labels."`+reaper.LabelSession+`"`)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	live, mine := 0, 0
	seen := map[string]bool{}
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		seen[c.ID()] = true
		// One being made counts: it will be a session. A ready one is no
		// caller's yet: its claim is counted as a session made.
		if info.Labels[reaper.LabelSessionReady] != "" {
			continue
		}
		if reason, _ := r.expire(ctx, c, info, true); reason == "" {
			live++
			if info.Labels[reaper.LabelSession] == caller {
				mine++
			}
		}
	}
	// Those this process makes that have no container yet.
	for mid, mc := range r.making {
		if !seen[mid] {
			live++
			if mc == caller {
				mine++
			}
		}
	}
	if max := contract.Or(smax.Sessions, contract.DefaultMaxSessions); live+n > max {
		return nil, &contract.SessionLimitError{Max: max}
	}
	if per := smax.PerCallerSessions(); caller != "" && mine+n > per {
		return nil, &contract.LimitError{Limit: "max-sessions-per-caller", Max: per, What: "sessions"}
	}
	var ids []string
	for i := range n {
		key := id
		if key == "" || i > 0 {
			key = "making-" + strconv.Itoa(len(r.making)) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		}
		r.making[key] = caller
		ids = append(ids, key)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			r.roomMu.Lock()
			defer r.roomMu.Unlock()
			for _, k := range ids {
				delete(r.making, k)
			}
		})
	}, nil
}
