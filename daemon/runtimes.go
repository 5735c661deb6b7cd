package daemon

import (
	"fmt"
	"strconv"
	"strings"
)

// RuncEscapeCVEs are the runc container escapes of November 2025: a
// malicious image or mount setup racing runc's masked paths, /dev/console
// bind mount and procfs writes.
const RuncEscapeCVEs = "CVE-2025-31133, CVE-2025-52565, CVE-2025-52881"

// runcFixed lists, for each maintained runc line, the first release with the
// fixes for RuncEscapeCVEs. Every line older than the first here has none;
// every line newer than the last has them all.
var runcFixed = []runcVersion{{1, 2, 8, ""}, {1, 3, 3, ""}, {1, 4, 0, ""}}

// runcVersion is a runc release: major.minor.patch and a pre-release
// suffix ("rc.2"), which sorts before the release itself.
type runcVersion struct {
	major, minor, patch int
	pre                 string
}

func (v runcVersion) less(w runcVersion) bool {
	switch {
	case v.major != w.major:
		return v.major < w.major
	case v.minor != w.minor:
		return v.minor < w.minor
	case v.patch != w.patch:
		return v.patch < w.patch
	}
	// 1.4.0-rc.3 < 1.4.0; pre-releases are not compared among themselves.
	return v.pre != "" && w.pre == ""
}

// parseRuncVersion reads what 'runc --version' prints after "runc version":
// "1.5.2", "1.4.0-rc.2", Debian's "1.1.5+ds1", a leading "v" or not.
func parseRuncVersion(s string) (runcVersion, error) {
	var v runcVersion
	core := strings.TrimPrefix(strings.TrimSpace(s), "v")
	// Build metadata ("+ds1") and Debian's "~" suffixes say nothing of the
	// upstream release.
	if i := strings.IndexAny(core, "+~"); i >= 0 {
		core = core[:i]
	}
	core, v.pre, _ = strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("runc version %q: want MAJOR.MINOR.PATCH", s)
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("runc version %q: %q is not a number", s, p)
		}
		nums[i] = n
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	return v, nil
}

// RuncHasEscapeFixes reports whether a runc release (as 'runc --version'
// names it) has the fixes for RuncEscapeCVEs: 1.2.8 or later in 1.2, 1.3.3
// or later in 1.3, 1.4.0 or later. It goes by the upstream version only, so
// a distribution's backport is not seen, and release candidates count as
// older than their release.
func RuncHasEscapeFixes(version string) (bool, error) {
	v, err := parseRuncVersion(version)
	if err != nil {
		return false, err
	}
	last := runcFixed[len(runcFixed)-1]
	if !v.less(last) {
		return true, nil
	}
	for _, f := range runcFixed {
		if v.major == f.major && v.minor == f.minor {
			return !v.less(f), nil
		}
	}
	return false, nil
}

// RuncNovember2026Fixes are what runc 1.5.3 fixes (November 2026): a
// malicious image's symlinks turning 'runc restore' into a read-write bind
// mount of any host directory, and runc clearing nosuid, nodev and noexec
// on a read-only root when no user namespace is used.
const RuncNovember2026Fixes = "CVE-2026-119101 (runc restore) and a read-only root losing nosuid/nodev/noexec without a user namespace"

// runcNovember2026 is the first release with RuncNovember2026Fixes: 1.4.4
// has the CVE's fix but not the other, and 1.6.0's release candidates
// predate both.
var runcNovember2026 = runcVersion{1, 5, 3, ""}

// RuncHasNovember2026Fixes reports whether a runc release (as 'runc
// --version' names it) has RuncNovember2026Fixes: 1.5.3 or later, not a
// release candidate of 1.6.0. Like RuncHasEscapeFixes, it goes by the
// upstream version only.
func RuncHasNovember2026Fixes(version string) (bool, error) {
	v, err := parseRuncVersion(version)
	if err != nil {
		return false, err
	}
	if v.major == 1 && v.minor == 6 && v.patch == 0 && v.pre != "" {
		return false, nil
	}
	return !v.less(runcNovember2026), nil
}

// RuncVersion returns the version in the first line of 'runc --version'
// output ("runc version 1.5.2" gives "1.5.2"), or "" if it has none.
func RuncVersion(out string) string {
	line, _, _ := strings.Cut(out, "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "runc version ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}
