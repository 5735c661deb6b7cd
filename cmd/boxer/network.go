package main

import (
	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/runner"
	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"
)

// operatorNetFlags are serve's and mcp's network policy: off unless the
// operator lists what requests may reach.
func operatorNetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "allow-host", Usage: "let requests open egress to `HOST[:PORT]` (repeatable, as run's --allow-host); a request may only narrow this list. Default: no request has network"},
		&cli.StringFlag{Name: "max-net-bytes", Value: units.BytesSize(runner.DefaultNetBytes), Usage: "largest net_bytes a request may ask"},
	}
}

// operatorAllowlist reads and checks --allow-host of serve or mcp.
func operatorAllowlist(c *cli.Context) ([]string, error) {
	hosts := c.StringSlice("allow-host")
	if _, err := egress.ParsePolicy(hosts); err != nil {
		return nil, fail("--allow-host: %v", err)
	}
	return hosts, nil
}

// operatorFileFlags are serve's and mcp's caps on files sent back.
func operatorFileFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-return-bytes", Value: units.BytesSize(runner.DefaultReturnBytes), Usage: "bytes of file content a result carries back for return_files; a file past it is listed, truncated, without content"},
	}
}
