package secrets

import (
	"slices"
	"strings"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		in    string
		names []string
	}{
		{in: "{{secret:A}}", names: []string{"A"}},
		{in: "Bearer {{secret:API_KEY}}", names: []string{"API_KEY"}},
		{in: "{{secret:B}}:{{secret:A}}/{{secret:B}}", names: []string{"B", "A"}},
		{in: "x}}{{secret:A}}}}", names: []string{"A"}},
		{in: "tab\there é {{secret:A}}", names: []string{"A"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			tmpl, err := ParseTemplate(tc.in)
			if err != nil {
				t.Fatalf("ParseTemplate(%q): %v", tc.in, err)
			}
			if got := tmpl.Names(); !slices.Equal(got, tc.names) {
				t.Errorf("Names = %q, want %q", got, tc.names)
			}
			if tmpl.String() != tc.in {
				t.Errorf("String = %q, want %q", tmpl.String(), tc.in)
			}
		})
	}
}

func TestParseTemplateErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: "", wantErr: "the template names no secret: put {{secret:NAME}} where the value goes"},
		{in: "sk-pasted-value", wantErr: "names no secret"},
		{in: "Bearer {{secret:API_KEY}", wantErr: `byte 7 of the template: "{{" does not start a {{secret:NAME}} reference`},
		{in: "{{env:A}}", wantErr: "does not start a {{secret:NAME}}"},
		{in: "{{ secret:A }}", wantErr: "does not start"},
		{in: "{{secret:A}} {{", wantErr: "byte 13 of the template"},
		{in: "{{{secret:A}}", wantErr: "does not start"},
		{in: "{{secret:}}", wantErr: "empty secret name"},
		{in: "{{secret:A-B}}", wantErr: `secret name "A-B": use letters`},
		{in: "a\r\nX: {{secret:A}}", wantErr: `the template holds a control character ('\r')`},
		{in: "{{secret:A}}\x00", wantErr: "control character"},
		{in: "{{secret:A}}\x7f", wantErr: "control character"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseTemplate(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseTemplate(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
			}
			if len(tc.in) > 3 && strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseTemplate(%q) = %q: repeats the template", tc.in, err)
			}
		})
	}
}

func TestRender(t *testing.T) {
	store, err := NewStore([]Named{
		{"USER", []byte("alice")},
		{"PASS", []byte("p@ss wörd\t!")},
		{"NL", []byte("tok\n")},
		{"CRLF", []byte("tok\r\n")},
		{"INNER", []byte("a\r\nX-Evil: 1")},
		{"NUL", []byte("a\x00b")},
		{"CTL", []byte("a\x1bb")},
		{"DEL", []byte("a\x7f")},
	})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	tests := []struct {
		tmpl    string
		want    string
		wantErr string
	}{
		{tmpl: "Basic {{secret:USER}}:{{secret:PASS}}", want: "Basic alice:p@ss wörd\t!"},
		{tmpl: "{{secret:USER}}{{secret:USER}}", want: "alicealice"},
		{tmpl: "Bearer {{secret:MISSING}}", wantErr: "the template names secret MISSING, which was not given: give --secret MISSING"},
		// Trailing line breaks (a file written with echo) are dropped.
		{tmpl: "Bearer {{secret:NL}}", want: "Bearer tok"},
		{tmpl: "Bearer {{secret:CRLF}}", want: "Bearer tok"},
		{tmpl: "Bearer {{secret:INNER}}", wantErr: "secret INNER holds a line break or a NUL byte"},
		{tmpl: "Bearer {{secret:NUL}}", wantErr: "secret NUL holds a line break or a NUL byte"},
		{tmpl: "Bearer {{secret:CTL}}", wantErr: "secret CTL holds a control character"},
		{tmpl: "Bearer {{secret:DEL}}", wantErr: "secret DEL holds a control character"},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl, func(t *testing.T) {
			tmpl, err := ParseTemplate(tc.tmpl)
			if err != nil {
				t.Fatalf("ParseTemplate: %v", err)
			}
			got, err := tmpl.Render(store.Lookup)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Render = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				for _, name := range store.Names() {
					if v, _ := store.Lookup(name); strings.Contains(err.Error(), string(v)) {
						t.Errorf("Render error %q holds the value of %s", err, name)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tc.want {
				t.Errorf("Render = %q, want %q", got, tc.want)
			}
		})
	}
}
