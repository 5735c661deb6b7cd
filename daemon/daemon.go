// Package daemon finds the containerd boxer talks to and, when the host has
// none, starts and stops boxer's private one ("embedded default").
//
// The private daemon is Linux's: elsewhere Ensure fails saying so, Stop finds
// none and GetStatus reports it not running. Resolve and Answers work
// everywhere, so a containerd given by address is still reachable.
package daemon

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults, as docs/reference.md documents them. BOXER_ROOT and BOXER_STATE
// move every boxer-owned file (tests use them to get a private world in a
// temporary directory).
const (
	DefaultRoot          = "/var/lib/boxer"
	DefaultState         = "/run/boxer"
	DefaultSystemAddress = "/run/containerd/containerd.sock"
	// LibexecDir is where 'make deps' builds the binaries boxer was tested
	// with: containerd, its runc shim and ctr, runc and runsc.
	LibexecDir = "/usr/local/lib/boxer/bin"
)

// Config locates boxer's private containerd and the files around it.
type Config struct {
	// Root is boxer's data directory; containerd's root is Root/containerd.
	Root string
	// State is boxer's runtime directory; containerd's state, socket, pid file
	// and lock live under it.
	State string
	// SystemAddress is probed before the private daemon; empty disables the probe.
	SystemAddress string
	// Binary is the containerd executable; empty means look it up.
	Binary string
	// Cache keeps built image layers by input hash; default Root/cache.
	Cache string
}

// FromEnv returns the configuration from BOXER_ROOT, BOXER_STATE,
// BOXER_SYSTEM_ADDRESS, BOXER_CONTAINERD and BOXER_CACHE, with the defaults
// docs/reference.md documents.
func FromEnv() Config {
	c := Config{
		Root:          envOr("BOXER_ROOT", DefaultRoot),
		State:         envOr("BOXER_STATE", DefaultState),
		SystemAddress: DefaultSystemAddress,
		Binary:        os.Getenv("BOXER_CONTAINERD"),
	}
	c.Cache = envOr("BOXER_CACHE", filepath.Join(c.Root, "cache"))
	if v, ok := os.LookupEnv("BOXER_SYSTEM_ADDRESS"); ok {
		c.SystemAddress = v
	}
	return c
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Address is the private daemon's socket.
func (c Config) Address() string { return filepath.Join(c.State, "containerd.sock") }

// ContainerdRoot is the private daemon's root directory.
func (c Config) ContainerdRoot() string { return filepath.Join(c.Root, "containerd") }

// ContainerdState is the private daemon's state directory.
func (c Config) ContainerdState() string { return filepath.Join(c.State, "containerd") }

// PIDFile holds the private daemon's PID.
func (c Config) PIDFile() string { return filepath.Join(c.State, "containerd.pid") }

// ConfigFile is the private daemon's generated configuration.
func (c Config) ConfigFile() string { return filepath.Join(c.State, "containerd.toml") }

// LogFile receives the private daemon's output.
func (c Config) LogFile() string { return filepath.Join(c.Root, "containerd.log") }

func (c Config) lockFile() string { return filepath.Join(c.State, "containerd.lock") }

// Resolve returns the containerd address to use: explicit if set; else the
// system socket if it answers; else boxer's private daemon, started if it is
// not running. progress, if not nil, hears about a start.
func Resolve(ctx context.Context, c Config, explicit string, progress io.Writer) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if c.SystemAddress != "" && Answers(c.SystemAddress) {
		return c.SystemAddress, nil
	}
	if _, err := Ensure(ctx, c, progress); err != nil {
		return "", err
	}
	return c.Address(), nil
}

// Answers reports whether something accepts connections on the unix socket.
func Answers(address string) bool {
	conn, err := net.DialTimeout("unix", strings.TrimPrefix(address, "unix://"), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Status describes the private daemon.
type Status struct {
	PID     int
	Running bool
	Address string
}
