package templates

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/imagebuild"
)

// TestTags: a build takes its name's tag, or latest; 'name:tag' is that
// build's image, kept while a tag names it and removed after; tags are
// bounded per key, kept for the next server, and another key's template
// has none it can see or change.
func TestTags(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var removed []string
	cfg := Config{
		Dir: dir,
		Build: func(_ context.Context, o imagebuild.Options) (imagebuild.Result, error) {
			return imagebuild.Result{Name: o.Name}, nil
		},
		Preset: noTemplates,
		Remove: func(_ context.Context, image string) error {
			mu.Lock()
			defer mu.Unlock()
			removed = append(removed, image)
			return nil
		},
	}
	ts, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	build := func(name string, tags ...string) Template {
		t.Helper()
		v, err := ts.Request("k1", Request{Name: name, Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Start("k1", v.ID, v.BuildID, BuildStart{FromTemplate: "base"}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			st, err := ts.Status("k1", v.ID, v.BuildID, 0, 100)
			if err != nil || st.Status == StatusError || time.Now().After(deadline) {
				t.Fatalf("build %s: %+v %v", name, st, err)
			}
			if st.Status == StatusReady {
				return v
			}
		}
	}
	v1 := build("app:v1")
	if !slices.Equal(v1.Tags, []string{"v1"}) {
		t.Errorf("app:v1's tags: %v", v1.Tags)
	}
	img1 := "boxer/e2b-" + v1.ID + "-" + v1.BuildID
	if got, ok := ts.View("k1", "app"); !ok || got.Image != img1 {
		t.Errorf("app with no latest: %+v %v, want its newest good build", got, ok)
	}
	v2 := build("app")
	img2 := "boxer/e2b-" + v2.ID + "-" + v2.BuildID
	for ref, want := range map[string]string{"app": img2, "app:latest": img2, "app:v1": img1, v1.ID + ":v1": img1} {
		if got, ok := ts.View("k1", ref); !ok || got.Image != want {
			t.Errorf("%s: %+v %v, want image %s", ref, got, ok, want)
		}
	}
	if _, ok := ts.View("k1", "app:nosuch"); ok {
		t.Error("app:nosuch found")
	}
	a, err := ts.AssignTags(context.Background(), "k1", "app:v1", []string{"prod"})
	if err != nil || a.BuildID != v1.BuildID {
		t.Errorf("assign prod to app:v1: %+v %v", a, err)
	}
	// Another key: nothing to see or change.
	if _, ok := ts.View("k2", "app:prod"); ok {
		t.Error("another key sees app:prod")
	}
	if _, err := ts.AssignTags(context.Background(), "k2", "app:v1", []string{"x"}); !is404(err) {
		t.Errorf("another key's assign: %v, want 404", err)
	}
	if err := ts.RemoveTags(context.Background(), "k2", "app", []string{"v1"}); !is404(err) {
		t.Errorf("another key's remove: %v, want 404", err)
	}
	if _, err := ts.Tags("k2", v1.ID); !is404(err) {
		t.Errorf("another key's list: %v, want 404", err)
	}
	for _, bad := range []struct {
		target string
		tags   []string
	}{{"app:v1", []string{":invalid"}}, {"app:v1", []string{"app:"}}, {"app:v1", nil}, {"app:", []string{"x"}}} {
		if _, err := ts.AssignTags(context.Background(), "k1", bad.target, bad.tags); err == nil || err.(*Error).Code != 400 {
			t.Errorf("assign %v to %q: %v, want 400", bad.tags, bad.target, err)
		}
	}
	if _, err := ts.Request("k1", Request{Name: "app:"}); err == nil || !strings.HasPrefix(err.Error(), "name:") {
		t.Errorf("build app: (no tag after the colon): %v, want a 400 naming name", err)
	}
	// v1 and prod go: app:v1's build's image with them, not before.
	if err := ts.RemoveTags(context.Background(), "k1", "app", []string{"v1"}); err != nil || slices.Contains(removed, img1) {
		t.Errorf("remove v1: %v, removed %v (prod still names it)", err, removed)
	}
	if err := ts.RemoveTags(context.Background(), "k1", "app", []string{"prod", "nosuch"}); !is404(err) {
		t.Errorf("remove a tag it has not: %v, want 404", err)
	}
	if err := ts.RemoveTags(context.Background(), "k1", "app", []string{"prod"}); err != nil || !slices.Contains(removed, img1) {
		t.Errorf("remove prod: %v, removed %v, want %s", err, removed, img1)
	}
	// The bound: latest and 63 more; then no more.
	var tags []string
	for i := range maxTagsPerKey - 1 {
		tags = append(tags, fmt.Sprintf("t%d", i))
	}
	if _, err := ts.AssignTags(context.Background(), "k1", "app", tags); err != nil {
		t.Errorf("assign %d tags: %v", len(tags), err)
	}
	if _, err := ts.AssignTags(context.Background(), "k1", "app", []string{"one-more"}); err == nil || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("past the bound: %v", err)
	}
	next, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := next.Tags("k1", "app")
	if err != nil || len(got) != maxTagsPerKey || got[0].Tag != "latest" || got[0].BuildID != v2.BuildID {
		t.Errorf("tags on the next server: %d %v, want %d, latest first", len(got), err, maxTagsPerKey)
	}
	if v, ok := next.View("k1", "app:t7"); !ok || v.Image != img2 {
		t.Errorf("app:t7 on the next server: %+v %v", v, ok)
	}
	if err := next.Delete(context.Background(), "k1", "app"); err != nil || !slices.Contains(removed, img2) {
		t.Errorf("delete: %v, removed %v", err, removed)
	}
}

func is404(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Code == 404
}
