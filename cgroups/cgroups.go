// Package cgroups detects the host's cgroup mode, checks that the controllers
// boxer's limits need are there, and reads a sandbox's figures (peak memory,
// CPU time, OOM kills) from its cgroup, on cgroup v1, hybrid and v2 hosts.
//
// Cgroups are Linux's: elsewhere DetectMode reports Unavailable, the checks
// and readers fail with an error saying boxer needs Linux, and Remove, Exists
// and Kill find nothing.
package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Mode is how cgroups are mounted on the host.
type Mode int

const (
	// Unavailable means no cgroup filesystem is mounted.
	Unavailable Mode = iota
	// Legacy means only cgroup v1 hierarchies.
	Legacy
	// Hybrid means cgroup v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified.
	Hybrid
	// Unified means cgroup v2 only.
	Unified
)

func (m Mode) String() string {
	switch m {
	case Legacy:
		return "v1"
	case Hybrid:
		return "hybrid (v1 controllers)"
	case Unified:
		return "v2"
	default:
		return "unavailable"
	}
}

// Root is where cgroup filesystems are mounted.
const Root = "/sys/fs/cgroup"

// required are the controllers boxer's limits and figures need.
var required = []string{"memory", "cpu", "pids"}

// Required returns the controllers boxer's limits and figures need.
func Required() []string { return slices.Clone(required) }

// Stats are the figures of one sandbox, read from its cgroup.
type Stats struct {
	// MemoryPeakBytes is the highest memory use seen (v1 max_usage_in_bytes,
	// v2 memory.peak, or memory.current where the kernel has no peak).
	MemoryPeakBytes uint64
	// MemoryBytes is the memory in use now (v1 usage_in_bytes, v2
	// memory.current).
	MemoryBytes uint64
	// CPUTimeNs is the CPU time used by every process, user and system.
	CPUTimeNs uint64
	// OOMKills counts the kernel's OOM kills inside the cgroup.
	OOMKills uint64
}

// ErrNoStat is returned by parsers when the key is not in the file.
var ErrNoStat = errors.New("no such stat")

// parseKeyed returns the value of key in a flat keyed file ("key value" lines)
// such as memory.events, cpu.stat or memory.oom_control.
func parseKeyed(r io.Reader, name, key string) (uint64, error) {
	s := bufio.NewScanner(r)
	for line := 1; s.Scan(); line++ {
		k, v, ok := strings.Cut(strings.TrimSpace(s.Text()), " ")
		if !ok || k != key {
			continue
		}
		n, err := parseUint(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("parsing %s line %d: %w", name, line, err)
		}
		return n, nil
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", name, err)
	}
	return 0, fmt.Errorf("%s: %s: %w", name, key, ErrNoStat)
}

// parseSingle parses a file holding one number, such as memory.peak; "max"
// reads as the largest value.
func parseSingle(data []byte, name string) (uint64, error) {
	n, err := parseUint(string(bytes.TrimSpace(data)))
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", name, err)
	}
	return n, nil
}

func parseUint(s string) (uint64, error) {
	if s == "max" {
		return ^uint64(0), nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseControllers returns the controllers named in a cgroup.controllers file.
func parseControllers(data []byte) map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(string(data)) {
		m[c] = true
	}
	return m
}
