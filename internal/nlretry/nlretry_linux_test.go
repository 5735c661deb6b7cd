package nlretry

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestDump(t *testing.T) {
	calls := 0
	xs, err := Dump(func() ([]int, error) {
		calls++
		if calls < 3 {
			return []int{1}, netlink.ErrDumpInterrupted
		}
		return []int{1, 2}, nil
	})
	if err != nil || len(xs) != 2 || calls != 3 {
		t.Errorf("after two interrupted dumps: %v %v after %d calls, want [1 2] after 3", xs, err, calls)
	}
	xs, err = Dump(func() ([]int, error) { return []int{1}, netlink.ErrDumpInterrupted })
	if !errors.Is(err, netlink.ErrDumpInterrupted) || xs != nil {
		t.Errorf("always interrupted: %v %v, want no list and ErrDumpInterrupted", xs, err)
	}
	other := errors.New("other")
	if _, err := Dump(func() ([]int, error) { return nil, other }); err != other {
		t.Errorf("another error: %v, want it as it is", err)
	}
}
