package session

// A session's end: the figures of ended sessions, taken once and bounded.

import (
	"fmt"
	"testing"

	"github.com/boxer-dev/boxer/egress"
)

// TestEndedNets: an ended session's figures are taken once, and those
// nobody takes are dropped past maxEndedNets.
func TestEndedNets(t *testing.T) {
	var e endedNets
	e.put("a", &egress.Report{Connections: 1})
	if got := e.take("a"); got == nil || got.Connections != 1 {
		t.Fatalf("take(a) = %v, want 1 connection", got)
	}
	if got := e.take("a"); got != nil {
		t.Errorf("take(a) again = %v, want nil", got)
	}
	for i := range maxEndedNets + 10 {
		e.put(fmt.Sprint(i), &egress.Report{Connections: i})
	}
	if got := e.take("0"); got != nil {
		t.Errorf("the oldest past the cap = %v, want dropped", got)
	}
	if got := e.take(fmt.Sprint(maxEndedNets + 9)); got == nil {
		t.Error("the newest was dropped")
	}
	if len(e.byID) != maxEndedNets-1 || len(e.order) != maxEndedNets-1 {
		t.Errorf("%d kept, %d in order, want %d", len(e.byID), len(e.order), maxEndedNets-1)
	}
}
