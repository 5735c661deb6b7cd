package e2b

import (
	"testing"

	pb "github.com/boxer-dev/boxer/e2b/envdspec/process"
	"github.com/boxer-dev/boxer/runner"
)

// A terminal that says no size (0 x 0, as E2B's CLI sends from script(1)
// or a CI runner) is 80 x 24; a size given is kept.
func TestTermSize(t *testing.T) {
	for _, c := range []struct {
		in   *pb.PTY_Size
		want runner.TermSize
	}{
		{&pb.PTY_Size{}, runner.TermSize{Cols: 80, Rows: 24}},
		{nil, runner.TermSize{Cols: 80, Rows: 24}},
		{&pb.PTY_Size{Cols: 100}, runner.TermSize{Cols: 100, Rows: 24}},
		{&pb.PTY_Size{Cols: 120, Rows: 40}, runner.TermSize{Cols: 120, Rows: 40}},
	} {
		if got := termSize(c.in); got != c.want {
			t.Errorf("termSize(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
