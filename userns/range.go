// Package userns gives runc sandboxes user namespaces of their own: each a
// block of host ids leased from boxer's range, made and owned by the
// block's first id, so that no two live sandboxes share a host uid nor the
// kernel's per-user counters (ucounts are charged, level by level, to each
// namespace's owner).
package userns

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is how many ids a sandbox's namespace maps: 0-65535 inside.
const Size = 1 << 16

// DefaultRange is boxer's range of host ids: 2^31 onwards, 16384 blocks.
// It lies above every range a distribution hands out (system and regular
// users, systemd's dynamic and homed users below 65536, /etc/subuid's
// usual 100000 onwards, systemd-nspawn's 524288-1879048191) and ends well
// below the invalid id 2^32-1. Only the host sees these ids: files on
// boxer's own tmpfs mounts and the sandboxes' processes.
const DefaultRange = "2147483648:1073741824"

// Range is a span of host ids, /etc/subuid style: Start, Count.
type Range struct {
	Start, Count uint32
}

func (r Range) String() string { return fmt.Sprintf("%d:%d", r.Start, r.Count) }

// Blocks is how many sandboxes the range holds at once.
func (r Range) Blocks() int { return int(r.Count / Size) }

// Block is the first host id of the range's block n.
func (r Range) Block(n int) uint32 { return r.Start + uint32(n)*Size }

// firstBlock is the host-wide number of the range's first block: blocks
// are leased by it (host id / 65536), so that two boxers given
// overlapping ranges never hand out the same ids.
func (r Range) firstBlock() int { return int(r.Start / Size) }

// ParseRange parses START:COUNT: at least one block of 65536 ids, none of
// them root's, all below 2^32-1.
func ParseRange(s string) (Range, error) {
	a, b, ok := strings.Cut(s, ":")
	start, err1 := strconv.ParseUint(a, 10, 32)
	count, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return Range{}, fmt.Errorf("user id range %q must be START:COUNT, like %s", s, DefaultRange)
	}
	if start == 0 || start%Size != 0 || count < Size || start+count > 1<<32-1 {
		return Range{}, fmt.Errorf("user id range %q must start at a positive multiple of %d, hold at least %d ids and end below 4294967295", s, Size, Size)
	}
	return Range{Start: uint32(start), Count: uint32(count)}, nil
}
