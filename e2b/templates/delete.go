package templates

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/boxer-dev/boxer/internal/quote"
)

// ErrImageInUse is what Config.Remove answers for an image a sandbox
// still runs in.
var ErrImageInUse = errors.New("a sandbox of it still runs")

// Delete removes caller's template (by ID or alias) and the image its
// builds made; another key's is not found (404), as one that never was. A
// template whose build runs, or whose image a sandbox still runs in, is
// refused (409): kill its sandboxes, or wait for the build, first.
func (ts *Store) Delete(ctx context.Context, caller, idOrAlias string) error {
	uploads, err := ts.delete(ctx, caller, idOrAlias)
	ts.dropUploads(caller, uploads)
	return err
}

// delete is Delete under the store's lock; it returns the uploads to drop.
func (ts *Store) delete(ctx context.Context, caller, idOrAlias string) (map[string]string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, idOrAlias)
	if !ok {
		return nil, errorf(404, "template %q not found", quote.Cut(idOrAlias))
	}
	if t.build != nil && (t.build.status == StatusWaiting || t.build.status == StatusBuilding) {
		return nil, errorf(409, "template %q: its build %s runs: delete it once the build ends", quote.Cut(idOrAlias), t.build.ID)
	}
	images := maps.Clone(t.images)
	if t.Image != "" && !slices.Contains(slices.Collect(maps.Values(images)), t.Image) {
		images[""] = t.Image
	}
	for id, image := range images {
		if ts.cfg.Remove == nil {
			break
		}
		if err := ts.cfg.Remove(ctx, image); errors.Is(err, ErrImageInUse) {
			return nil, errorf(409, "template %q: %v: kill its sandboxes first", quote.Cut(idOrAlias), err)
		} else if err != nil {
			return nil, err
		}
		delete(t.images, id)
	}
	for token, u := range ts.tokens {
		if u.tmpl == t {
			delete(ts.tokens, token)
		}
	}
	delete(ts.byID, t.ID)
	ts.saveLocked()
	return t.uploads, nil
}
