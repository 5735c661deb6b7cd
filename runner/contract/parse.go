package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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

// ParseSizeLimit reads a size given for one of a request's limits
// (memory, tmp_size, output_limit): a *FieldError if it is not a size or
// not a value the limit accepts (zero included: it was given).
func ParseSizeLimit(field, s string) (int64, error) {
	n, err := units.RAMInBytes(s)
	if err != nil {
		return 0, FieldErr(field, "must be a size, like 256m, 1g or 512MiB, not %q", s)
	}
	return n, CheckLimit(field, float64(n))
}

// ParseTimeout reads a timeout given as a Go duration ("30s", "1m30s").
func ParseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, FieldErr(FieldTimeout, "must be a duration, like 30s or 2m, not %q", s)
	}
	return d, CheckLimit(FieldTimeout, float64(d))
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
		return 0, 0, FieldErr(FieldUser, "must be a numeric UID:GID, like 65534:65534, not %q", s)
	}
	return uint32(uid), uint32(gid), nil
}
