package daemon

import (
	"context"
	"io"
)

// The API has a body per platform (daemon_linux.go, daemon_other.go): these
// pin the signatures both must have, so that vet on either platform catches
// one that drifted.
var (
	_ func(context.Context, Config, io.Writer) (bool, error) = Ensure
	_ func(Config) (string, error)                           = Config.BinaryPath
	_ func(Config) (string, error)                           = Config.RuncShimPath
	_ func(Config) Status                                    = GetStatus
	_ func(context.Context, Config) (bool, error)            = Stop
)
