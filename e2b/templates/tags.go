package templates

// Template tags (E2B's Template.assignTags, removeTags, getTags, and
// Template.build(t, 'name:tag')): a tag names one good build of a key's
// template, and 'name:tag' runs that build's image. A build takes the tag
// of its name and the request's tags, or "latest" when it names none;
// "name" alone is "name:latest". Each build a tag names keeps its image;
// one no tag names (and not the newest good build) is removed.

import (
	"context"
	"errors"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/internal/quote"
)

// DefaultTag is the tag of a build that names none, and what a name
// without a tag means.
const DefaultTag = "latest"

// maxTagsPerKey bounds the tags one key holds over all its templates.
const maxTagsPerKey = 64

// tagForm is a tag: letters, digits, '.', '_' and '-'.
var tagForm = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Tag is a tag as E2B's TemplateTag says it.
type Tag struct {
	Tag     string
	BuildID string
	Created time.Time
}

// splitName splits 'name:tag'; tag is "" without a colon.
func splitName(s string) (name, tag string, hasTag bool) {
	name, tag, hasTag = strings.Cut(s, ":")
	return name, tag, hasTag
}

// checkTags checks tags' form: a 400 naming the first bad one.
func checkTags(field string, tags []string) error {
	for _, tag := range tags {
		if !tagForm.MatchString(tag) {
			return errorf(400, "%s: %q is not a tag: letters, digits, '.', '_' and '-', at most 128, no ':'", field, quote.Cut(tag))
		}
	}
	return nil
}

// tagCountLocked is how many tags caller holds; the store's lock is held.
func (ts *Store) tagCountLocked(caller string) int {
	n := 0
	for _, t := range ts.byID {
		if t.Owner == caller {
			n += len(t.tags)
		}
	}
	return n
}

// roomLocked refuses tags that would take caller past maxTagsPerKey
// (those t has already are moved, not added).
func (ts *Store) roomLocked(caller string, t *template, tags []string) error {
	add := 0
	for _, tag := range tags {
		if _, ok := t.tags[tag]; !ok {
			add++
		}
	}
	if add > 0 && ts.tagCountLocked(caller)+add > maxTagsPerKey {
		return errorf(400, "tags: a key holds at most %d tags: remove some first (Template.removeTags)", maxTagsPerKey)
	}
	return nil
}

// setTagsLocked points tags of t at build id.
func (t *template) setTagsLocked(id string, tags []string) {
	now := time.Now()
	for _, tag := range tags {
		t.tags[tag] = Tag{Tag: tag, BuildID: id, Created: now}
	}
}

// pruneLocked removes the images of t's builds that no tag names and
// that are not its newest good one; one a sandbox still runs in is kept
// for the next time.
func (ts *Store) pruneLocked(ctx context.Context, t *template) {
	named := map[string]bool{}
	for _, g := range t.tags {
		named[g.BuildID] = true
	}
	for id, image := range t.images {
		if named[id] || image == t.Image {
			continue
		}
		if ts.cfg.Remove != nil {
			if err := ts.cfg.Remove(ctx, image); err != nil {
				if !errors.Is(err, ErrImageInUse) && ts.cfg.Warn != nil {
					ts.cfg.Warn(err)
				}
				continue
			}
		}
		delete(t.images, id)
	}
}

// resolveLocked is caller's template by 'name[:tag]' (or ID[:tag]) as it
// is now, its Image and BuildID those of the build the tag names: the
// name alone is its "latest" tag, or its newest good build when it has
// none.
func (ts *Store) resolveLocked(caller, ref string) (Template, bool) {
	name, tag, hasTag := splitName(ref)
	t, ok := ts.ownedLocked(caller, name)
	if !ok {
		return Template{}, false
	}
	v := t.view()
	if !hasTag {
		tag = DefaultTag
	}
	g, ok := t.tags[tag]
	switch {
	case ok:
		v.Image, v.BuildID = t.images[g.BuildID], g.BuildID
	case hasTag:
		return Template{}, false
	}
	return v, true
}

// Assigned is what AssignTags did: the build the tags name now.
type Assigned struct {
	BuildID string
	Tags    []string
}

// AssignTags points tags at the build target ('name:tag', or 'name' for
// its latest) names, of caller's template.
func (ts *Store) AssignTags(ctx context.Context, caller, target string, tags []string) (Assigned, error) {
	if len(tags) == 0 {
		return Assigned{}, errorf(400, "tags: name at least one tag")
	}
	if err := checkTags("tags", tags); err != nil {
		return Assigned{}, err
	}
	name, tag, hasTag := splitName(target)
	if hasTag {
		if err := checkTags("target", []string{tag}); err != nil {
			return Assigned{}, err
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, name)
	v, found := ts.resolveLocked(caller, target)
	if !ok || !found || v.Image == "" {
		return Assigned{}, errorf(404, "target: template %q not found, or it has no good build", quote.Cut(target))
	}
	if err := ts.roomLocked(caller, t, tags); err != nil {
		return Assigned{}, err
	}
	if _, kept := t.images[v.BuildID]; !kept {
		t.images[v.BuildID] = v.Image
	}
	t.setTagsLocked(v.BuildID, tags)
	ts.pruneLocked(ctx, t)
	ts.saveLocked()
	return Assigned{BuildID: v.BuildID, Tags: tags}, nil
}

// RemoveTags removes tags of caller's template name (or ID); a tag it
// does not have is not found (404), and then none is removed.
func (ts *Store) RemoveTags(ctx context.Context, caller, name string, tags []string) error {
	if len(tags) == 0 {
		return errorf(400, "tags: name at least one tag")
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, name)
	if !ok {
		return errorf(404, "template %q not found", quote.Cut(name))
	}
	for _, tag := range tags {
		if _, ok := t.tags[tag]; !ok {
			return errorf(404, "tag %q of template %q not found", quote.Cut(tag), quote.Cut(name))
		}
	}
	for _, tag := range tags {
		delete(t.tags, tag)
	}
	ts.pruneLocked(ctx, t)
	ts.saveLocked()
	return nil
}

// Tags are caller's template's (by ID or name) tags, by name.
func (ts *Store) Tags(caller, idOrName string) ([]Tag, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.ownedLocked(caller, idOrName)
	if !ok {
		return nil, errorf(404, "template %q not found", quote.Cut(idOrName))
	}
	out := make([]Tag, 0, len(t.tags))
	for _, g := range t.tags {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out, nil
}
