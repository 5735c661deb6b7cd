//go:build !linux

package cgroups

import "errors"

var errNotLinux = errors.New("boxer sandboxes need Linux: this host has no cgroups")

// DetectMode returns Unavailable: only Linux has cgroups.
func DetectMode() Mode { return Unavailable }

// Check returns an error: boxer cannot enforce its limits without cgroups.
func Check(m Mode) error { return errNotLinux }

// Controllers returns nil: there are no controllers without cgroups.
func Controllers(m Mode) []string { return nil }

// ReadStats returns an error: there is no cgroup to read.
func ReadStats(m Mode, path string) (Stats, error) { return Stats{}, errNotLinux }

// ReadLimits returns an error: there is no cgroup to read.
func ReadLimits(m Mode, path string) (Limits, error) { return Limits{}, errNotLinux }

// Remove does nothing: no sandbox can have left a cgroup behind.
func Remove(m Mode, path string) error { return nil }

// Exists reports false: there are no cgroups.
func Exists(m Mode, path string) bool { return false }

// Kill finds no process: there are no cgroups.
func Kill(m Mode, path string) int { return 0 }

// Peak is not measured off Linux.
type Peak struct{}

// WatchPeak returns nil off Linux.
func WatchPeak(m Mode, path string) *Peak { return nil }

// Read fails off Linux.
func (p *Peak) Read() (uint64, error) { return 0, errNotLinux }
