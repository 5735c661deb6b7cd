package e2b

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/internal/quote"
)

// A list's page, as E2B's API documents GET /v2/sandboxes: by start time,
// newest first unless order=asc, from startedAfter on, limit (1 to 100,
// 100 unless given) at a time, the next page named by the X-Next-Token
// the previous one answered with.

// maxPage is the most sandboxes one page lists (E2B's maximum and default).
const maxPage = 100

// page is a list request's order, bounds and cursor.
type page struct {
	asc   bool
	after time.Time
	limit int
	// from is the cursor: the last sandbox of the page before.
	from *cursor
}

// cursor is a place in the list's order: a start time, then an ID.
type cursor struct {
	started time.Time
	id      string
}

// listedBox is one sandbox of a list, with what orders it.
type listedBox struct {
	id      string
	started time.Time
	out     map[string]any
}

// parsePage reads order, startedAfter, limit and nextToken; an error
// names the parameter.
func parsePage(q url.Values) (page, error) {
	p := page{limit: maxPage}
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		p.asc = true
	default:
		return p, fmt.Errorf("order: must be asc or desc, not %q", quote.Cut(o))
	}
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return p, fmt.Errorf("startedAfter: must be a date-time as RFC 3339 writes it (2026-01-02T15:04:05Z), not %q", quote.Cut(v))
		}
		p.after = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return p, fmt.Errorf("limit: must be a whole number from 1 to %d, not %q", maxPage, quote.Cut(v))
		}
		p.limit = n
	}
	if v := q.Get("nextToken"); v != "" {
		c, err := parseCursor(v)
		if err != nil {
			return p, fmt.Errorf("nextToken: is not one this server answered with (X-Next-Token): %q", quote.Cut(v))
		}
		p.from = c
	}
	return p, nil
}

// cut orders boxes, keeps those of the page and says the next page's
// token ("" when this is the last).
func (p page) cut(boxes []listedBox) ([]map[string]any, string) {
	slices.SortFunc(boxes, func(a, b listedBox) int {
		c := a.started.Compare(b.started)
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if !p.asc {
			c = -c
		}
		return c
	})
	out := []map[string]any{}
	var last listedBox
	for _, b := range boxes {
		if b.started.Before(p.after) || p.from != nil && !p.beyond(b) {
			continue
		}
		if len(out) == p.limit {
			return out, cursor{last.started, last.id}.String()
		}
		out = append(out, b.out)
		last = b
	}
	return out, ""
}

// beyond says whether b comes after the page's cursor in its order.
func (p page) beyond(b listedBox) bool {
	c := b.started.Compare(p.from.started)
	if c == 0 {
		c = strings.Compare(b.id, p.from.id)
	}
	if p.asc {
		return c > 0
	}
	return c < 0
}

// String is the cursor as a token: opaque to clients.
func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.started.UnixNano(), 10) + "." + c.id))
}

func parseCursor(tok string) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, err
	}
	ns, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("bad cursor")
	}
	return &cursor{time.Unix(0, n), id}, nil
}

// handleList lists the caller's sandboxes, filtered and paged as above.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	want, err := url.ParseQuery(q.Get("metadata"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "metadata: must be key=value pairs joined by &, URL-encoded: "+err.Error())
		return
	}
	states := map[string]bool{}
	for _, st := range q["state"] {
		for _, v := range strings.Split(st, ",") {
			if v != "running" && v != "paused" {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("state: must be running or paused, not %q", v))
				return
			}
			states[v] = true
		}
	}
	page, err := parsePage(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	caller := callerOf(r)
	sessions, err := s.runner.Sessions(r.Context(), caller)
	if err != nil {
		s.answerError(w, "", err)
		return
	}
	var found []listedBox
	for _, sess := range sessions {
		sb, ok := s.lookup(sess.ID)
		if !ok || sb.Caller != caller {
			continue
		}
		if t := q.Get("template"); t != "" && t != sb.Template {
			continue
		}
		if !matches(sb.Metadata, want) {
			continue
		}
		l := s.listed(sb, sess, s.domainOf(r))
		if len(states) > 0 && !states[l["state"].(string)] {
			continue
		}
		found = append(found, listedBox{sb.ID, sb.Started, l})
	}
	out, next := page.cut(found)
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	writeJSON(w, http.StatusOK, out)
}

// matches: every key of want has one of its values in md.
func matches(md map[string]string, want url.Values) bool {
	for k, vs := range want {
		if v, ok := md[k]; !ok || !slices.Contains(vs, v) {
			return false
		}
	}
	return true
}
