package warm

import (
	"sync"
	"time"
)

// A shared shim serves many sandboxes, so that a run does not start a shim
// of its own (issue 17: the shim's start is the largest single cost of a
// sandbox). containerd 2.x reuses a running shim for a new task whose
// container names a sandbox (core/runtime/v2/shim_manager.go, Start): a
// record of that ID in its sandbox store, and a task of that ID whose shim
// then serves the new one as well. The runc shim serves many tasks, but it
// has no sandbox API, so boxer makes that pair itself: an anchor, a
// sandbox like any other whose program only waits, and a sandbox record of
// its ID. A member is a sandbox whose container names an anchor.
//
// An anchor serves a bounded number of members (its shim's memory stays
// bounded; one shim's death ends few runs), then it is retired: it takes no
// more, a new one takes its slot, and it is removed once its last member
// is gone (a member must not outlive its anchor's task: containerd finds
// the shim through it).

// anchor is one shared shim's holder, as the shimSet keeps account of it.
type anchor struct {
	id   string
	slot int
	// sb is its sandbox, set by whoever makes it, before ready closes.
	sb *Sandbox
	// ready is closed once the anchor is made, or failed (err); exited
	// once its task has ended.
	ready  chan struct{}
	exited chan struct{}
	err    error
	// made: ready to take members; joined counts all it was given,
	// members those not yet gone.
	made    bool
	joined  int
	members int
	// retired: takes no new member (recycled, dead, failed or closing);
	// dead: its task ended under its members (its shim died); removing:
	// its removal has been handed out, once.
	retired  bool
	dead     bool
	removing bool
}

// shimSet keeps size anchors in slots, hands them out to sandboxes in
// turn, and tells when one is to be made or removed. It does not touch
// containerd: Warm does what it says (see anchor_linux.go).
type shimSet struct {
	mu    sync.Mutex
	slots []*anchor
	next  int
	// recycle is the number of members an anchor takes before it retires.
	recycle int
	// off: there is no sandbox store (containerd before 2.0); pausedUntil:
	// an anchor failed to be made, and none is tried again before then.
	off         bool
	pausedUntil time.Time
	closed      bool
	now         func() time.Time
	newID       func() string
	// shared counts the sandboxes that joined an anchor.
	shared int64
	// lost are the IDs of anchors whose removal failed.
	lost []string
}

// shimRetry is how long sandboxes run with shims of their own after an
// anchor could not be made.
const shimRetry = 30 * time.Second

func newShimSet(size, recycle int, newID func() string) *shimSet {
	return &shimSet{slots: make([]*anchor, size), recycle: max(recycle, 1), now: time.Now, newID: newID}
}

// pick gives a sandbox an anchor, nil for a shim of its own: the next made
// anchor in turn, or, when none is made yet, one being made (the caller
// waits on its ready). Each empty slot gets a new anchor, which the caller
// makes (made says how it went): mk lists them. The caller calls leave when
// the sandbox is gone.
func (s *shimSet) pick() (a *anchor, mk []*anchor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off || s.closed || len(s.slots) == 0 || s.now().Before(s.pausedUntil) {
		return nil, nil
	}
	mk = s.fill()
	var waiting *anchor
	for range s.slots {
		cur := s.slots[s.next]
		s.next = (s.next + 1) % len(s.slots)
		if cur.made {
			a = cur
			break
		}
		if waiting == nil {
			waiting = cur
		}
	}
	if a == nil {
		a = waiting
	}
	a.joined++
	a.members++
	s.shared++
	if a.joined >= s.recycle {
		// Its replacement is made now, before a sandbox needs it.
		s.retire(a)
		mk = append(mk, s.fill()...)
	}
	return a, mk
}

// fill puts a new anchor in each empty slot and returns them.
func (s *shimSet) fill() []*anchor {
	var mk []*anchor
	for i, cur := range s.slots {
		if cur == nil {
			cur = &anchor{id: s.newID(), slot: i, ready: make(chan struct{}), exited: make(chan struct{})}
			s.slots[i] = cur
			mk = append(mk, cur)
		}
	}
	return mk
}

// made records how making a went. A failure retires it, and stops making
// anchors for shimRetry, or for good when off (no sandbox store).
func (s *shimSet) made(a *anchor, err error, off bool) (remove bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.err = err
	if s.closed {
		s.retire(a)
	}
	if err == nil && !a.retired {
		a.made = true
	}
	if err != nil {
		s.retire(a)
		s.off = s.off || off
		s.pausedUntil = s.now().Add(shimRetry)
	}
	close(a.ready)
	return s.removable(a)
}

// leave records that a member of a is gone; remove says that a is to be
// removed now (retired, and that was its last member).
func (s *shimSet) leave(a *anchor) (remove bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.members--
	return s.removable(a)
}

// died records that a's task ended while it was in use: its shim is gone
// (its members' runs end with it), and a new anchor takes its slot. news
// says that this was not known yet and a was not being removed (then its
// task was killed on purpose).
func (s *shimSet) died(a *anchor) (news, remove bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.removing || a.dead {
		return false, false
	}
	a.dead = true
	s.retire(a)
	return true, s.removable(a)
}

// isDead says whether a's shim died.
func (s *shimSet) isDead(a *anchor) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.dead
}

// close retires every anchor, makes no new one, and returns those to
// remove now; the others go when their last member leaves.
func (s *shimSet) close() []*anchor {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var out []*anchor
	for _, a := range s.slots {
		if a == nil {
			continue
		}
		s.retire(a)
		if s.removable(a) {
			out = append(out, a)
		}
	}
	return out
}

// sharedRuns counts the sandboxes that were given an anchor.
func (s *shimSet) sharedRuns() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared
}

// retire takes a out of its slot: it gets no new member.
func (s *shimSet) retire(a *anchor) {
	a.retired = true
	if s.slots[a.slot] == a {
		s.slots[a.slot] = nil
	}
}

// removable says, once, that a is to be removed: retired, not being made,
// and without members.
func (s *shimSet) removable(a *anchor) bool {
	select {
	case <-a.ready:
	default:
		return false
	}
	if !a.retired || a.members > 0 || a.removing {
		return false
	}
	a.removing = true
	return true
}

// lose records an anchor whose removal failed, to be tried again.
func (s *shimSet) lose(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = append(s.lost, id)
}

// takeLost returns the anchors whose removal failed, and forgets them.
func (s *shimSet) takeLost() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.lost
	s.lost = nil
	return ids
}
