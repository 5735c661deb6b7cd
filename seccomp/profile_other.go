//go:build !linux

package seccomp

import specs "github.com/opencontainers/runtime-spec/specs-go"

// DefaultProfile returns nil: boxer's profile holds Linux constants, and
// boxer sandboxes need Linux.
func DefaultProfile() *specs.LinuxSeccomp {
	return nil
}

// GVisorProfile returns nil, as DefaultProfile.
func GVisorProfile() *specs.LinuxSeccomp {
	return nil
}
