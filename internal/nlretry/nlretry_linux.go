// Package nlretry repeats a netlink dump the kernel interrupted. It owns
// nothing else and imports nothing of boxer's.
package nlretry

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
)

// attempts bounds the repeats: each is one dump of a table that another
// process changed while it was read; a table that changes every time is
// reported, not waited on.
const attempts = 20

// Dump calls list until the kernel answers one whole dump. The kernel marks
// a dump interrupted (NLM_F_DUMP_INTR) when its table changed while it was
// read, as it does on a host where other sandboxes' links and routes come
// and go, and netlink then returns what it got with ErrDumpInterrupted:
// part of a list, which must not be taken for the whole.
func Dump[T any](list func() ([]T, error)) ([]T, error) {
	var err error
	for range attempts {
		var xs []T
		if xs, err = list(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return xs, err
		}
	}
	return nil, fmt.Errorf("%w (%d times in a row)", err, attempts)
}
