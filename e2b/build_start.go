package e2b

// A sandbox of a built template: its start command runs in the background
// when it is made, and it is ready (the create call answers) when the
// template's ready command exits 0, as E2B's setStartCmd promises.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/e2b/templates"
	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/runner"
)

// readyWithin bounds how long a template's ready command may take to pass.
const readyWithin = 2 * time.Minute

// readyEvery is how often the ready command runs until it passes.
const readyEvery = 250 * time.Millisecond

// templateNotFound is a template that is not there for the caller: one
// that never was, or another key's.
type templateNotFound struct{ name string }

func (e *templateNotFound) Error() string {
	return fmt.Sprintf("templateID: template %q not found: boxer's templates are base, code-interpreter-v1, its presets (%s), its images by reference ('boxer image list') and this key's own", quote.Cut(e.name), strings.Join(runner.PresetNames(), ", "))
}

// startTemplate starts t's start command in sb and waits for its ready
// command to pass.
func (s *Server) startTemplate(ctx context.Context, sb *sandbox, t *templates.Template) error {
	cwd := t.Workdir
	if cwd == "" || cwd == "/" {
		cwd = envdHome
	}
	_, err := s.runner.StartProcess(ctx, sb.ID, sb.Caller, runner.ProcessRequest{
		Args: []string{"/bin/sh", "-c", t.StartCmd}, Env: envList(sb.Env), Cwd: cwd, Tag: "start",
	})
	if err != nil {
		return fmt.Errorf("starting the template's start command: %w", err)
	}
	if t.ReadyCmd == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readyWithin)
	defer cancel()
	var last runner.Result
	for {
		res, err := s.runner.RunInSession(ctx, sb.ID, sb.Caller, runner.SessionCall{Code: []byte(t.ReadyCmd), Timeout: 10 * time.Second}, s.cfg.Max)
		if err == nil && res.ExitCode == 0 && res.Status == runner.StatusExited {
			return nil
		}
		last = res
		select {
		case <-ctx.Done():
			return &badField{"templateID", fmt.Sprintf("template %q: its ready command (%s) did not pass within %s: last exit %d %s", t.Alias, quote.Cut(t.ReadyCmd), readyWithin, last.ExitCode, quote.Cut(strings.TrimSpace(last.Stderr)))}
		case <-time.After(readyEvery):
		}
	}
}
