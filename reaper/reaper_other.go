//go:build !linux

package reaper

import (
	"context"
	"errors"
	"os"

	containerd "github.com/containerd/containerd/v2/client"
)

// Sandboxes exist only on Linux: elsewhere there is nothing to reap, and
// the run directory functions say so.

var errNotLinux = errors.New("boxer sandboxes need Linux")

// Config says where a reaper looks and how it removes a sandbox.
type Config struct {
	Client             *containerd.Client
	Namespace, Address string
	Runs, State        string
	Bundles, Shim      string
	Destroy            func(ctx context.Context, c containerd.Container) error
}

// Reaper is one pass over the leftovers.
type Reaper struct{}

// Start does nothing off Linux.
func Start(context.Context, Config) *Reaper { return &Reaper{} }

// Wait returns at once off Linux.
func (r *Reaper) Wait() {}

// Self identifies this process.
func Self() string { return "" }

// Alive reports false off Linux.
func Alive(string) bool { return false }

// MakeRunDir fails off Linux.
func MakeRunDir(string, string) (string, error) { return "", errNotLinux }

// RemoveRunDir fails off Linux.
func RemoveRunDir(string) error { return errNotLinux }

// WriteFileAtomic fails off Linux.
func WriteFileAtomic(string, []byte, os.FileMode) error { return errNotLinux }

// ShimScript is empty off Linux.
func ShimScript(string) string { return "" }

// ShimWrap is empty off Linux.
func ShimWrap(string) []string { return nil }

// OwnerOf is "" off Linux.
func OwnerOf(int) string { return "" }
