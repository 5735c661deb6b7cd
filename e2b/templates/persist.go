package templates

// The templates kept across servers: a restarted or upgraded server on the
// same state directory answers for the templates its predecessor built
// (their images are in containerd). Owners are kept as the callers' names
// (a hash of the key, never the key); a build the server stopped during
// is kept failed, to be built again.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
)

// storeFile holds the templates in the store's directory.
const storeFile = "templates.json"

// maxStoreFile bounds what a store file may hold when read back.
const maxStoreFile = 64 << 20

// record is a template as kept.
type record struct {
	Template
	Reason, Step string `json:",omitempty"`
	// Tags and Images are its tags and its builds' images (none in a
	// former server's that had no tags: its Image is then its latest).
	Tags   []Tag             `json:",omitempty"`
	Images map[string]string `json:",omitempty"`
}

// load reads the templates a former server kept, if any.
func (ts *Store) load() error {
	if ts.cfg.Dir == "" {
		return nil
	}
	p := filepath.Join(ts.cfg.Dir, storeFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the E2B templates a former server kept: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxStoreFile {
		return fmt.Errorf("reading the E2B templates a former server kept: %s is not a regular file of at most %d MiB", p, maxStoreFile>>20)
	}
	var recs []record
	if err := json.NewDecoder(f).Decode(&recs); err != nil {
		return fmt.Errorf("reading the E2B templates a former server kept, %s: %w (move it away to start without them)", p, err)
	}
	for _, r := range recs {
		if r.ID == "" || r.Owner == "" {
			continue
		}
		t := newTemplate(r.Template)
		for _, g := range r.Tags {
			t.tags[g.Tag] = g
		}
		maps.Copy(t.images, r.Images)
		if r.Image != "" && len(r.Images) == 0 {
			id := r.BuildID
			if r.BuildStatus != StatusReady {
				id = "kept"
			}
			t.images[id] = r.Image
			t.setTagsLocked(id, []string{DefaultTag})
		}
		b := &build{ID: r.BuildID, status: r.BuildStatus, reason: r.Reason, step: r.Step}
		if b.status == StatusWaiting || b.status == StatusBuilding {
			msg := "the server stopped during this build: build the template again"
			b.log("error", "base", "%s", msg)
			b.status, b.reason, b.step = StatusError, msg, "base"
		}
		t.build = b
		t.BuildID, t.BuildStatus = "", ""
		ts.byID[t.ID] = t
	}
	return nil
}

// saveLocked keeps the templates for the next server, the store's lock
// held: written whole to a temporary file, then renamed over the last.
func (ts *Store) saveLocked() {
	if ts.cfg.Dir == "" {
		return
	}
	recs := []record{}
	for _, t := range ts.byID {
		r := record{Template: t.view(), Images: t.images}
		for _, g := range t.tags {
			r.Tags = append(r.Tags, g)
		}
		if t.build != nil {
			r.Reason, r.Step = t.build.reason, t.build.step
		}
		recs = append(recs, r)
	}
	err := func() error {
		data, err := json.Marshal(recs)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(ts.cfg.Dir, 0o700); err != nil {
			return err
		}
		p := filepath.Join(ts.cfg.Dir, storeFile)
		tmp := p + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, p)
	}()
	if err != nil && ts.cfg.Warn != nil {
		ts.cfg.Warn(fmt.Errorf("keeping the E2B templates for the next server: %w", err))
	}
}
