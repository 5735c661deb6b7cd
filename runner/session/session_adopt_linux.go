package session

// Sessions that outlive their holder, taken over by the next server.

import (
	"context"
	"path/filepath"
	"strconv"

	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	"github.com/containerd/log"
)

// heirOf is who takes over session sr when its holder is gone: its
// Heir, for a held session.
func heirOf(sr contract.SessionRequest) string {
	if !sr.Held {
		return ""
	}
	return sr.Heir
}

// AdoptSessions makes this process the holder of the sessions of its
// namespace whose holder is gone and whose heir is heir
// (SessionRequest.Heir), and returns their IDs: they answer as before,
// their callers, timers, network and processes as they were. A server
// calls it as it starts.
func (r *Layer) AdoptSessions(ctx context.Context, heir string) []string {
	if heir == "" {
		return nil
	}
	cs, err := r.Containerd.Containers(ctx, `labels."`+reaper.LabelSessionHeir+`"==`+strconv.Quote(heir))
	if err != nil {
		log.G(ctx).WithError(err).Warn("listing sessions to take over")
		return nil
	}
	var ids []string
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil || !reaper.Orphan(labels) {
			continue
		}
		if _, ending := reaper.BeingEnded(labels); ending || labels[reaper.LabelSessionEnding] != "" {
			continue
		}
		if _, err := c.SetLabels(ctx, map[string]string{reaper.LabelOwner: r.Owner}); err != nil {
			log.G(ctx).WithError(err).Warnf("taking over session %s", c.ID())
			continue
		}
		if err := reaper.HandRunDir(filepath.Join(r.RunsDir, c.ID()), r.Owner); err != nil {
			log.G(ctx).WithError(err).Debugf("taking over session %s's run directory", c.ID())
		}
		ids = append(ids, c.ID())
	}
	return ids
}
