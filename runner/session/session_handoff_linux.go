package session

// A session's end told to its holder when another process ended it.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner/contract"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/log"
)

// handedEnd is what the process that ended another live process's
// session leaves for it (a file under endedDir): the holder writes its
// audit log, and only it knows the session's interface and caller's
// name there. The ender has read the network figures from the keeper,
// which the removal stops.
type handedEnd struct {
	Owner     string         `json:"owner"`
	Namespace string         `json:"namespace"`
	Caller    string         `json:"caller"`
	Reason    string         `json:"reason"`
	Network   *egress.Report `json:"network,omitempty"`
}

// maxHandedEnd bounds the read of one record: the figures are a few
// hundred bytes (hosts are capped at the allowlist's size).
const maxHandedEnd = 256 << 10

// endedDir is where ends are handed to their holders.
func (r *Layer) endedDir() string { return filepath.Join(r.StateDir, "ended") }

// handEnd leaves session c's end (reason, its network figures) for the
// live process that holds it, when that is not this one. labels are the
// session's before its removal.
func (r *Layer) handEnd(ctx context.Context, c containerd.Container, labels map[string]string, reason string, rep *egress.Report) {
	owner := labels[reaper.LabelOwner]
	if owner == "" || owner == r.Owner || labels[reaper.LabelSessionReady] != "" || reaper.BeingMade(labels) || !reaper.Alive(owner) {
		return
	}
	data, err := json.Marshal(handedEnd{Owner: owner, Namespace: r.Namespace, Caller: labels[reaper.LabelSession], Reason: reason, Network: rep})
	if err == nil {
		err = os.MkdirAll(r.endedDir(), 0o700)
	}
	if err == nil {
		err = reaper.WriteFileAtomic(filepath.Join(r.endedDir(), r.Namespace+"."+c.ID()+".json"), data, 0o600)
	}
	if err != nil {
		log.G(ctx).WithError(err).Debugf("handing session %s's end to %s", c.ID(), owner)
	}
}

// takeHandedEnds returns the ends of this process's sessions that other
// processes handed to it, and removes them; a record whose holder is gone
// is removed unread.
func (r *Layer) takeHandedEnds() []contract.EndedSession {
	entries, _ := os.ReadDir(r.endedDir())
	var ended []contract.EndedSession
	for _, e := range entries {
		ns, rest, ok := strings.Cut(e.Name(), ".")
		id, ok2 := strings.CutSuffix(rest, ".json")
		if !ok || !ok2 || ns != r.Namespace || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(r.endedDir(), e.Name())
		rec, err := readHandedEnd(path)
		switch {
		case err != nil || !reaper.Alive(rec.Owner):
			_ = os.Remove(path)
		case rec.Owner == r.Owner:
			ended = append(ended, contract.EndedSession{ID: id, Caller: rec.Caller, Reason: rec.Reason, Network: rec.Network})
			_ = os.Remove(path)
		}
	}
	return ended
}

// readHandedEnd reads one record, at most maxHandedEnd bytes of it, never
// following a link.
func readHandedEnd(path string) (handedEnd, error) {
	var rec handedEnd
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return rec, err
	}
	defer f.Close()
	err = json.NewDecoder(io.LimitReader(f, maxHandedEnd)).Decode(&rec)
	return rec, err
}
