//go:build !linux

package imagecmd

import (
	"errors"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

// buildFromDockerfile fails: build steps are sandboxes on Linux.
func (Env) buildFromDockerfile(*cli.Context, *runner.Runner, imagebuild.Options) (imagebuild.Result, error) {
	return imagebuild.Result{}, errors.New("building from a Dockerfile needs Linux")
}
