package main

import (
	"context"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/runner"
)

// e2bBuilder builds E2B's templates on r's containerd.
func e2bBuilder(r *runner.Runner) func(context.Context, imagebuild.Options) (imagebuild.Result, error) {
	return func(ctx context.Context, o imagebuild.Options) (imagebuild.Result, error) {
		return imagebuild.Build(ctx, r.Host, o)
	}
}
