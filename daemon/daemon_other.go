//go:build !linux

package daemon

import (
	"context"
	"errors"
	"io"
)

var errNotLinux = errors.New("boxer's private containerd needs Linux: give the address of a running containerd")

// Ensure returns an error: boxer starts its private containerd only on Linux.
func Ensure(ctx context.Context, c Config, progress io.Writer) (bool, error) {
	return false, errNotLinux
}

// BinaryPath returns an error: boxer starts containerd only on Linux.
func (c Config) BinaryPath() (string, error) { return "", errNotLinux }

// RuncShimPath returns an error: runc and its shim are Linux's.
func (c Config) RuncShimPath() (string, error) { return "", errNotLinux }

// GetStatus reports the private daemon not running: it never runs here.
func GetStatus(c Config) Status { return Status{Address: c.Address()} }

// Stop reports that there was no private daemon to stop.
func Stop(ctx context.Context, c Config) (bool, error) { return false, nil }

// RuntimeBinary returns an error: runc and runsc are Linux's.
func RuntimeBinary(name string) (string, error) { return "", errNotLinux }

// ContainerdPath knows no containerd's PATH off Linux.
func ContainerdPath(address string) (path, source string) { return "", "" }

// DaemonPath returns an error: boxer starts containerd only on Linux.
func (c Config) DaemonPath() (string, error) { return "", errNotLinux }

// LookPathIn finds nothing off Linux.
func LookPathIn(name, path string) (string, error) { return "", errNotLinux }
