package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"

	hostlease "github.com/boxer-dev/boxer/internal/lease"
)

// A lease is one /30 of the egress range, held by one sandbox: its number
// names the host end's interface ("bxn" + number) and the sandbox's table
// ("boxer_" + number). Leases are files under one directory for the whole
// host (interface names are the host's too), each naming its holder's run
// directory, written under an exclusive lock so that concurrent boxer
// processes, whatever their state directory, never share one.
type lease struct {
	dir string
	n   int
}

// leaseSubnet is the size of a lease: a /30 holds the gateway and the
// sandbox.
const leaseBits = 2

// hostIfPrefix starts the name of every host end boxer makes.
const hostIfPrefix = "bxn"

func (l lease) hostIf() string { return hostIfPrefix + strconv.Itoa(l.n) }
func (l lease) table() string  { return tablePrefix + strconv.Itoa(l.n) }
func (l lease) file() string   { return filepath.Join(l.dir, strconv.Itoa(l.n)) }

// addrs returns the gateway's and the sandbox's addresses of lease n in
// rng.
func leaseAddrs(rng netip.Prefix, n int) (gateway, sandbox netip.Addr) {
	base := rng.Masked().Addr().As4()
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	v += uint32(n) << leaseBits
	gw := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v + 1)})
	return gw, gw.Next()
}

// leaseCount is how many leases rng holds.
func leaseCount(rng netip.Prefix) int {
	return 1 << (32 - leaseBits - rng.Bits())
}

// takeLease writes the lowest free lease of rng for the sandbox whose run
// directory is holder.
func takeLease(dir string, rng netip.Prefix, holder string) (lease, error) {
	n, err := hostlease.Dir(dir).Take(0, leaseCount(rng), holder)
	if errors.Is(err, hostlease.ErrFull) {
		return lease{}, fmt.Errorf("egress range %s is full (%d sandboxes with network): wait, or give a larger one with --net-range", rng, leaseCount(rng))
	}
	return lease{dir: dir, n: n}, err
}

// release removes the lease file.
func (l lease) release() error {
	if err := hostlease.Dir(l.dir).Release(l.n); err != nil {
		return fmt.Errorf("releasing address lease: %w", err)
	}
	return nil
}

// leases reads the held leases: number to holder.
func leases(dir string) (map[int]string, error) { return hostlease.Dir(dir).Held() }

// withLock runs fn holding dir's lock file exclusively.
func withLock(dir string, fn func() error) error { return hostlease.Dir(dir).Locked(fn) }
