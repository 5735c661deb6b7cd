package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/go-units"
)

// ParseSize reads docker-style sizes: 256m, 1g, 512MiB, 1048576.
func ParseSize(s string) (int64, error) {
	n, err := units.RAMInBytes(s)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: use a number with an optional unit, like 256m, 1g or 512MiB", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("invalid size %q: must not be negative", s)
	}
	return n, nil
}

// ParseUser reads a numeric UID[:GID]; GID defaults to UID.
func ParseUser(s string) (uint32, uint32, error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		g = u
	}
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %q: want numeric UID:GID, like 65534:65534", s)
	}
	return uint32(uid), uint32(gid), nil
}
