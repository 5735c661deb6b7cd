package imagecmd

import (
	"github.com/boxer-dev/boxer/fault"
	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// buildFromDockerfile runs the build on r's host.
func (e Env) buildFromDockerfile(c *cli.Context, r *runner.Runner, o imagebuild.Options) (imagebuild.Result, error) {
	res, err := imagebuild.Build(c.Context, r.Host, o)
	if fault.Is(err) {
		return res, e.HostFault(err)
	}
	return res, err
}
