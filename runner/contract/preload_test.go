package contract

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestParsePreloads: --preload entries, and the one-line errors for bad
// ones, which name the field.
func TestParsePreloads(t *testing.T) {
	p, err := ParsePreloads([]string{"python-data=numpy, pandas", "python=json,xml.etree.ElementTree", "python-data=scipy"})
	if err != nil {
		t.Fatalf("ParsePreloads: %v", err)
	}
	if got := p.For("python-data"); !slices.Equal(got, []string{"scipy"}) {
		t.Errorf("python-data = %v, want the last entry's [scipy]", got)
	}
	if got := p.For("python"); !slices.Equal(got, []string{"json", "xml.etree.ElementTree"}) {
		t.Errorf("python = %v", got)
	}
	if got := Preloads(nil).For("python-data"); !slices.Equal(got, []string{"numpy", "pandas", "matplotlib", "matplotlib.pyplot"}) {
		t.Errorf("default python-data = %v, want the preset's", got)
	}
	off, _ := ParsePreloads([]string{"python-data="})
	if got := off.For("python-data"); len(got) != 0 {
		t.Errorf("python-data= gives %v, want none", got)
	}
	if got := Preloads(nil).For("bash"); got != nil {
		t.Errorf("bash = %v, want nil", got)
	}
	for _, tc := range []struct{ entry, want string }{
		{"python-data", "must be LANG=MODULE"},
		{"cobol=x", "unknown language"},
		{"bash=x", "cannot be preloaded"},
		{"python-data=numpy;import os", "not a Python module name"},
		{"python-data=nu-mpy", "not a Python module name"},
		{"python-data=numpy..linalg", "not a Python module name"},
		{"python-data=1numpy", "not a Python module name"},
	} {
		_, err := ParsePreloads([]string{tc.entry})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != FieldPreload || !strings.Contains(fe.Message, tc.want) || strings.Contains(fe.Message, "\n") {
			t.Errorf("ParsePreloads(%q) = %v, want a preload error saying %q", tc.entry, err, tc.want)
		}
	}
}

// TestRequestPreload: NormalizeWithin takes the operator's list unless the
// request opts out; a request's own list is checked.
func TestRequestPreload(t *testing.T) {
	max := Maxima{Preload: Preloads{"python": {"json"}}}
	req, err := Request{Lang: "python-data", Code: []byte("1")}.NormalizeWithin(max)
	if err != nil || len(req.Preload) != 4 {
		t.Errorf("python-data: %v %v, want the preset's four modules", req.Preload, err)
	}
	req, err = Request{Lang: "python", Code: []byte("1")}.NormalizeWithin(max)
	if err != nil || !slices.Equal(req.Preload, []string{"json"}) {
		t.Errorf("python: %v %v, want the operator's [json]", req.Preload, err)
	}
	req, err = Request{Lang: "python-data", Code: []byte("1"), NoPreload: true}.NormalizeWithin(max)
	if err != nil || req.Preload != nil || req.Shape().Preload != "" {
		t.Errorf("opted out: %v %v, want none", req.Preload, err)
	}
	_, err = Request{Lang: "python", Code: []byte("1"), Preload: []string{"os; x"}}.Normalize()
	if fe := (*FieldError)(nil); !errors.As(err, &fe) || fe.Field != FieldPreload {
		t.Errorf("bad module: %v, want a preload error", err)
	}
	_, err = Request{Lang: "bash", Code: []byte("1"), Preload: []string{"os"}}.Normalize()
	if fe := (*FieldError)(nil); !errors.As(err, &fe) || fe.Field != FieldPreload {
		t.Errorf("bash with a preload: %v, want a preload error", err)
	}
}
