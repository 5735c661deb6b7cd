//go:build !linux

package main

import (
	"context"
	"errors"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/runner"
)

// e2bBuilder refuses: images are built only on Linux.
func e2bBuilder(*runner.Runner, string) func(context.Context, imagebuild.Options) (imagebuild.Result, error) {
	return func(context.Context, imagebuild.Options) (imagebuild.Result, error) {
		return imagebuild.Result{}, errors.New("building templates needs Linux")
	}
}
