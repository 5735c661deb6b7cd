package e2b

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestListPages(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	var boxes []listedBox
	for i, id := range []string{"c", "a", "b", "d", "e"} {
		// a and b start at the same instant: the ID orders them.
		at := t0.Add(time.Duration(min(i, 1)+max(i-2, 0)) * time.Minute)
		boxes = append(boxes, listedBox{id, at, map[string]any{"sandboxID": id}})
	}
	walk := func(q string) []string {
		t.Helper()
		var got []string
		v, _ := url.ParseQuery(q)
		for n := 0; n < 10; n++ {
			p, err := parsePage(v)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			out, next := p.cut(append([]listedBox(nil), boxes...))
			var ids []string
			for _, o := range out {
				ids = append(ids, o["sandboxID"].(string))
			}
			got = append(got, strings.Join(ids, ""))
			if next == "" {
				return got
			}
			v.Set("nextToken", next)
		}
		t.Fatalf("%s: no last page", q)
		return nil
	}
	for q, want := range map[string]string{
		"":                  "edbac",
		"order=asc":         "cabde",
		"limit=2":           "ed ba c",
		"limit=2&order=asc": "ca bd e",
		"limit=1&startedAfter=2026-12-06T08:01:00Z": "e d b a",
		"startedAfter=2026-12-06T08:02:30Z":         "e",
	} {
		if got := strings.Join(walk(q), " "); got != want {
			t.Errorf("%q: pages %q, want %q", q, got, want)
		}
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "order=up", "startedAfter=yesterday", "nextToken=!!!", "nextToken=bm9wZQ"} {
		v, _ := url.ParseQuery(q)
		if _, err := parsePage(v); err == nil || !strings.HasPrefix(err.Error(), strings.SplitN(q, "=", 2)[0]+":") {
			t.Errorf("%q: %v, want an error naming the parameter", q, err)
		}
	}
}

func TestUnsupportedFeature(t *testing.T) {
	for path, want := range map[string]string{
		"/sandboxes/abc/refreshes": "refreshes (a sandbox's time is set with timeout)",
		"/templates/t1":            "templates",
		"/templates/t1/builds/b1":  "template builds",
		"/admin/teams/x/api-keys":  "E2B's administration",
		"/volumes/v1":              "volumes",
		"/sandboxes/abc/nothing":   "",
		"/no/such/thing":           "",
		"/sandboxes//refreshes":    "",
	} {
		if got := unsupportedFeature(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}
