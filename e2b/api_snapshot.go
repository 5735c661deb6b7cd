package e2b

// Snapshots: a running sandbox's state kept on disk, from which new
// sandboxes are made later (boxer's kept session snapshots, on gVisor).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/runner"
)

// DefaultMaxSnapshots is how many snapshots one key keeps at once when
// Config.MaxSnapshots is 0.
const DefaultMaxSnapshots = 10

// snapshotPrefix begins every snapshot's ID: a template ID (Sandbox.create
// and Sandbox.deleteSnapshot name one as a template) that is a snapshot.
const snapshotPrefix = "snapshot-"

// maxSnapshotName bounds a snapshot's name.
const maxSnapshotName = 128

// snapshotMeta is what E2B keeps beside a snapshot: its name, the sandbox
// it was made of, and that sandbox's record (its code contexts too).
type snapshotMeta struct {
	Name   string `json:"name,omitempty"`
	Source string `json:"source"`
	Record record `json:"record"`
}

// snapshotNotFound is a create from a snapshot that is not the key's.
type snapshotNotFound struct{ id string }

func (e *snapshotNotFound) Error() string {
	return fmt.Sprintf("templateID: snapshot %q not found (Sandbox.listSnapshots lists this key's)", quote.Cut(e.id))
}

func (e *snapshotNotFound) Is(target error) bool { return target == runner.ErrSnapshotNotFound }

func isSnapshotID(id string) bool { return strings.HasPrefix(id, snapshotPrefix) }

// newSnapshotID makes a snapshot's ID.
func newSnapshotID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return snapshotPrefix + hex.EncodeToString(b)
}

// handleSnapshot keeps sandbox id's state as a snapshot of the caller
// (Sandbox.createSnapshot): it goes on running.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	id, caller := r.PathValue("id"), callerOf(r)
	var body struct {
		Name string `json:"name"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	if len(body.Name) > maxSnapshotName {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("name: at most %d bytes", maxSnapshotName))
		return
	}
	src, _, err := s.find(r.Context(), caller, id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	meta, err := json.Marshal(snapshotMeta{Name: body.Name, Source: id, Record: recordOf(src, s.interp.Contexts(id))})
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	kept, err := s.runner.Snapshots(caller)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	if max := s.maxSnapshots(); len(kept) >= max {
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("this key keeps %d snapshot(s), the most this server allows (--e2b-max-snapshots): delete one (Sandbox.deleteSnapshot) first", max))
		return
	}
	snap := newSnapshotID()
	if _, err := s.runner.SaveSnapshot(r.Context(), id, caller, snap, meta); err != nil {
		s.refuse(w, r, audit.EventSnapshot, id, err)
		return
	}
	src.note("info", "snapshot made", map[string]string{"snapshotID": snap})
	e := entry(r, audit.EventSnapshot, id, http.StatusCreated)
	e.Reason = snap
	s.cfg.Audit.Write(e)
	writeJSON(w, http.StatusCreated, map[string]any{"snapshotID": snap, "names": namesOf(body.Name)})
}

func (s *Server) maxSnapshots() int {
	if s.cfg.MaxSnapshots > 0 {
		return s.cfg.MaxSnapshots
	}
	return DefaultMaxSnapshots
}

func namesOf(name string) []string {
	if name == "" {
		return []string{}
	}
	return []string{name}
}

// listedSnapshot is a snapshot as listed, with what it was made of.
type listedSnapshot struct {
	id   string
	made time.Time
	meta snapshotMeta
}

// snapshots are the caller's snapshots, newest first.
func (s *Server) snapshots(caller string) ([]listedSnapshot, error) {
	kept, err := s.runner.Snapshots(caller)
	if err != nil {
		return nil, err
	}
	out := make([]listedSnapshot, 0, len(kept))
	for _, k := range kept {
		ls := listedSnapshot{id: k.Name, made: k.Made}
		if !isSnapshotID(k.Name) || json.Unmarshal(k.Meta, &ls.meta) != nil {
			continue
		}
		out = append(out, ls)
	}
	slices.SortFunc(out, func(a, b listedSnapshot) int {
		if c := b.made.Compare(a.made); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out, nil
}

// handleSnapshots lists the caller's snapshots (Sandbox.listSnapshots),
// newest first: of one sandbox (sandboxID) or name if given, limit (1 to
// 100, 100 unless given) at a time, the next page after the ID the
// X-Next-Token header names.
func (s *Server) handleSnapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := maxPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit: must be a whole number from 1 to %d, not %q", maxPage, quote.Cut(v)))
			return
		}
		limit = n
	}
	after := q.Get("nextToken")
	list, err := s.snapshots(callerOf(r))
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	if after != "" && !slices.ContainsFunc(list, func(l listedSnapshot) bool { return l.id == after }) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("nextToken: is not one this server answered with (X-Next-Token): %q", quote.Cut(after)))
		return
	}
	out := []map[string]any{}
	skipping := after != ""
	for _, l := range list {
		if skipping {
			skipping = l.id != after
			continue
		}
		if sb := q.Get("sandboxID"); sb != "" && l.meta.Source != sb || q.Get("name") != "" && l.meta.Name != q.Get("name") {
			continue
		}
		if len(out) == limit {
			w.Header().Set("X-Next-Token", out[len(out)-1]["snapshotID"].(string))
			break
		}
		out = append(out, map[string]any{"snapshotID": l.id, "names": namesOf(l.meta.Name)})
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteSnapshot deletes the caller's snapshot id and the disk it holds
// (Sandbox.deleteSnapshot, which deletes it as a template).
func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request, id string) {
	err := s.runner.RemoveSnapshot(id, callerOf(r))
	if err != nil {
		s.refuse(w, r, audit.EventSnapDeleted, id, err)
		return
	}
	s.audited(r, audit.EventSnapDeleted, id, http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

// createFromSnapshot makes a sandbox of caller restored from its
// snapshot id: the snapshot's sandbox's state, record and code contexts,
// with body's timeout, lifecycle, and metadata and env vars over its own.
func (s *Server) createFromSnapshot(ctx context.Context, caller, id string, body newSandbox) (*sandbox, error) {
	var meta snapshotMeta
	kept, err := s.runner.Snapshots(caller)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(kept, func(k runner.Kept) bool { return k.Name == id })
	if i < 0 {
		return nil, &snapshotNotFound{id}
	}
	if err := json.Unmarshal(kept[i].Meta, &meta); err != nil {
		return nil, fmt.Errorf("reading snapshot %s: %w", id, err)
	}
	// SDKs up to 2.50 send allow_internet_access: true on every create,
	// which the default network (none) answers with none.
	if hosts, err := s.allowHosts(body.AllowInternetAccess, body.Network); err != nil {
		return nil, err
	} else if len(hosts) > 0 {
		return nil, &badField{"network", "a sandbox made from a snapshot has no network (a snapshot is of a sandbox without)"}
	}
	timeout := defaultTimeout
	if body.Timeout != nil {
		if *body.Timeout <= 0 {
			return nil, &badField{"timeout", "must be a positive number of seconds"}
		}
		timeout = time.Duration(*body.Timeout) * time.Second
	}
	src := sandboxOf(meta.Record)
	if len(body.Metadata) > 0 {
		src.Metadata = body.Metadata
	}
	if len(body.EnvVars) > 0 {
		env := maps.Clone(src.Env)
		if env == nil {
			env = map[string]string{}
		}
		maps.Copy(env, body.EnvVars)
		src.Env = env
	}
	lifetime := timeout
	if body.AutoPause != nil && *body.AutoPause {
		src.auto = &autoPause{resume: body.AutoResume != nil && body.AutoResume.Enabled, timeout: timeout}
		lifetime = s.cfg.Sessions.Lifetime
		if lifetime <= 0 {
			lifetime = runner.DefaultMaxSessionLifetime
		}
	}
	sess, err := s.runner.SessionFromSnapshot(ctx, id, caller, true, lifetime, s.cfg.Sessions)
	if errors.Is(err, runner.ErrSnapshotNotFound) {
		return nil, &snapshotNotFound{id}
	}
	if err != nil {
		return nil, err
	}
	sb := s.adoptFork(ctx, src, meta.Record.Contexts, sess, int64(timeout/time.Second))
	sb.note("info", "sandbox made from a snapshot", map[string]string{"snapshotID": id})
	return sb, nil
}
