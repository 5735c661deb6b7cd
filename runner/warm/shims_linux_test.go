package warm

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// testShimSet is a shimSet whose anchors are named a1, a2, ... in the
// order they are asked for, and whose clock the test moves.
func testShimSet(size, recycle int) (*shimSet, *time.Time) {
	n := 0
	s := newShimSet(size, recycle, func() string {
		n++
		return fmt.Sprintf("a%d", n)
	})
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	return s, &now
}

func ids(as []*anchor) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.id)
	}
	return out
}

// TestShimSetRoundRobin: the first pick fills every slot; sandboxes wait
// for an anchor being made only while none is made, then go round the
// made ones in turn.
func TestShimSetRoundRobin(t *testing.T) {
	s, _ := testShimSet(2, 100)
	a, mk := s.pick()
	if got := ids(mk); len(got) != 2 || got[0] != "a1" || got[1] != "a2" {
		t.Fatalf("first pick makes %v, want [a1 a2]", got)
	}
	if a.id != "a1" {
		t.Errorf("first pick = %s, want a1 (being made)", a.id)
	}
	s.made(mk[1], nil, false)
	for i, want := range []string{"a2", "a2"} {
		if a, mk := s.pick(); a.id != want || len(mk) > 0 {
			t.Errorf("pick %d with a2 made = %s (making %v), want %s", i, a.id, ids(mk), want)
		}
	}
	s.made(mk[0], nil, false)
	var got []string
	for range 4 {
		a, _ := s.pick()
		got = append(got, a.id)
	}
	if fmt.Sprint(got) != "[a1 a2 a1 a2]" && fmt.Sprint(got) != "[a2 a1 a2 a1]" {
		t.Errorf("picks with both made = %v, want them in turn", got)
	}
	if n := s.sharedRuns(); n != 7 {
		t.Errorf("sharedRuns = %d, want 7", n)
	}
}

// TestShimSetRecycle: an anchor that has taken recycle members takes no
// more, a new one takes its slot, and it is removed when its last member
// leaves, not before.
func TestShimSetRecycle(t *testing.T) {
	s, _ := testShimSet(1, 3)
	a1, mk := s.pick()
	if s.made(mk[0], nil, false) {
		t.Fatal("an anchor with a member is removed once made")
	}
	s.pick()
	a, mk := s.pick()
	if a != a1 || len(mk) != 1 || mk[0].id != "a2" {
		t.Fatalf("third pick = %s making %v, want a1, and a2 made to replace it", a.id, ids(mk))
	}
	if a, mk := s.pick(); a.id != "a2" || len(mk) > 0 {
		t.Fatalf("fourth pick = %s making %v, want a2 (being made)", a.id, ids(mk))
	}
	for i := range 3 {
		if remove := s.leave(a1); remove != (i == 2) {
			t.Errorf("leave %d of a1: remove = %v, want %v", i+1, remove, i == 2)
		}
	}
	if s.leave(a1) {
		t.Error("a1 handed out for removal twice")
	}
}

// TestShimSetDeath: an anchor that dies is replaced at once, removed after
// its last member, and its death is news once.
func TestShimSetDeath(t *testing.T) {
	s, _ := testShimSet(1, 100)
	a1, mk := s.pick()
	s.made(mk[0], nil, false)
	s.pick()
	news, remove := s.died(a1)
	if !news || remove {
		t.Fatalf("died with 2 members = news %v, remove %v; want news, not removed", news, remove)
	}
	if news, _ := s.died(a1); news {
		t.Error("a second death is news")
	}
	if !s.isDead(a1) {
		t.Error("isDead = false after died")
	}
	if a, mk := s.pick(); a.id != "a2" || len(mk) != 1 {
		t.Errorf("pick after a death = %s making %v, want a2 made", a.id, ids(mk))
	}
	if s.leave(a1) || !s.leave(a1) {
		t.Error("a dead anchor is not removed exactly when its last member leaves")
	}

	// Removed on purpose (at close), its task's end is no death.
	s, _ = testShimSet(1, 100)
	a, mk := s.pick()
	s.made(mk[0], nil, false)
	s.leave(a)
	if got := ids(s.close()); len(got) != 1 || got[0] != a.id {
		t.Fatalf("close = %v, want [%s]", got, a.id)
	}
	if news, remove := s.died(a); news || remove {
		t.Errorf("died after close = news %v, remove %v; want neither", news, remove)
	}
	if a, mk := s.pick(); a != nil || len(mk) > 0 {
		t.Errorf("pick after close = %v making %v, want none", a, ids(mk))
	}
}

// TestShimSetFailure: an anchor that cannot be made sends its sandboxes to
// shims of their own, and none is tried again for shimRetry, or ever when
// containerd has no sandbox store.
func TestShimSetFailure(t *testing.T) {
	tests := []struct {
		name      string
		off       bool
		afterward bool // an anchor is tried again after shimRetry
	}{
		{name: "failed", off: false, afterward: true},
		{name: "no sandbox store", off: true, afterward: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, now := testShimSet(2, 100)
			a, mk := s.pick()
			s.made(mk[0], errors.New("no"), tc.off)
			if !s.made(mk[1], errors.New("no"), tc.off) {
				t.Error("a failed anchor without members is not removed at once")
			}
			if a.err == nil {
				t.Fatal("the waiting sandbox sees no error")
			}
			if !s.leave(a) {
				t.Error("a failed anchor is not removed after its last member")
			}
			if a, mk := s.pick(); a != nil || len(mk) > 0 {
				t.Errorf("pick after a failure = %v making %v, want none", a, ids(mk))
			}
			*now = now.Add(shimRetry)
			a, mk = s.pick()
			if got := a != nil && len(mk) == 2; got != tc.afterward {
				t.Errorf("pick after shimRetry gives an anchor: %v, want %v", got, tc.afterward)
			}
		})
	}
}

// TestShimSetLost: an anchor whose removal failed is handed out once to be
// removed again, and again after it fails once more.
func TestShimSetLost(t *testing.T) {
	s, _ := testShimSet(1, 100)
	s.lose("a1")
	s.lose("a2")
	if got := fmt.Sprint(s.takeLost()); got != "[a1 a2]" {
		t.Fatalf("takeLost = %s, want [a1 a2]", got)
	}
	if got := s.takeLost(); len(got) != 0 {
		t.Errorf("takeLost again = %v, want none", got)
	}
	s.lose("a2")
	if got := fmt.Sprint(s.takeLost()); got != "[a2]" {
		t.Errorf("takeLost after a failed retry = %s, want [a2]", got)
	}
}
