package main

import (
	"context"

	"github.com/boxer-dev/boxer/imagebuild"
	"github.com/boxer-dev/boxer/runner"
)

// e2bBuilder builds E2B's templates on r's containerd, their steps on
// runtime (the server's --runtime: a caller's runCmd is as isolated as
// its sandboxes).
func e2bBuilder(r *runner.Runner, runtime string) func(context.Context, imagebuild.Options) (imagebuild.Result, error) {
	return func(ctx context.Context, o imagebuild.Options) (imagebuild.Result, error) {
		if o.Runtime == "" {
			o.Runtime = runtime
		}
		return imagebuild.Build(ctx, r.Host, o)
	}
}
