package secrets

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want Spec // Text is always in
	}{
		{in: "API_KEY", want: Spec{Name: "API_KEY"}},
		{in: "API_KEY,env", want: Spec{Name: "API_KEY", Env: true}},
		{in: "K=file:/run/k", want: Spec{Name: "K", Source: Source{Kind: FromFile, Path: "/run/k"}}},
		{in: "K=file:/x,env", want: Spec{Name: "K", Source: Source{Kind: FromFile, Path: "/x"}, Env: true}},
		{in: "K=file:rel/a=b:c", want: Spec{Name: "K", Source: Source{Kind: FromFile, Path: "rel/a=b:c"}}},
		{in: "K=file:/a,b", want: Spec{Name: "K", Source: Source{Kind: FromFile, Path: "/a,b"}}},
		{in: "DB_PASS=cmd:vault kv get -field=pw secret/db", want: Spec{Name: "DB_PASS", Source: Source{Kind: FromCmd, Argv: []string{"vault", "kv", "get", "-field=pw", "secret/db"}}}},
		{in: "K=cmd:pass show k,env", want: Spec{Name: "K", Source: Source{Kind: FromCmd, Argv: []string{"pass", "show", "k"}}, Env: true}},
		{in: "K=cmd:  echo   a\tb  ", want: Spec{Name: "K", Source: Source{Kind: FromCmd, Argv: []string{"echo", "a", "b"}}}},
		{in: "K=cmd:echo 'a,env'", want: Spec{Name: "K", Source: Source{Kind: FromCmd, Argv: []string{"echo", "a,env"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", tc.in, err)
			}
			tc.want.Text = tc.in
			if got.Name != tc.want.Name || got.Env != tc.want.Env || got.Text != tc.want.Text ||
				got.Source.Kind != tc.want.Source.Kind || got.Source.Path != tc.want.Source.Path ||
				!slices.Equal(got.Source.Argv, tc.want.Source.Argv) {
				t.Errorf("ParseSpec(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
		hidden  string // must not appear in the message
	}{
		{in: "", wantErr: "give NAME, NAME=file:PATH or NAME=cmd:COMMAND ARGS"},
		{in: ",env", wantErr: "give NAME"},
		{in: "=hunter2", wantErr: "--secret =…: give NAME", hidden: "hunter2"},
		{in: "API_KEY=somevalue", wantErr: "--secret API_KEY=…: give NAME, NAME=file:PATH or NAME=cmd:COMMAND ARGS (a value is never given on the command line)", hidden: "somevalue"},
		{in: "API_KEY=somevalue,env", wantErr: "--secret API_KEY=…: give NAME", hidden: "somevalue"},
		{in: "API_KEY=env:X", wantErr: "a value is never given", hidden: "env:X"},
		{in: "API_KEY=", wantErr: "--secret API_KEY=…: give NAME"},
		{in: "API_KEY=File:/x", wantErr: "a value is never given", hidden: "File"},
		{in: "a-b", wantErr: `secret name "a-b": use letters`},
		{in: "a-b=file:/x", wantErr: `secret name "a-b": use letters`},
		{in: "1X", wantErr: "not starting with a digit"},
		{in: "K,env,env", wantErr: "use letters"},
		{in: "K=file:", wantErr: "--secret K=file:: give the file's path after file:"},
		{in: "K=file:,env", wantErr: "give the file's path"},
		{in: "K=cmd:", wantErr: "give a command after cmd:"},
		{in: "K=cmd:   ", wantErr: "give a command after cmd:"},
		{in: "K=cmd:echo 'a", wantErr: "--secret K=cmd:echo 'a: unterminated ' quote"},
		{in: `K=cmd:echo "a`, wantErr: `unterminated " quote`},
		{in: `K=cmd:echo a\`, wantErr: "nothing follows the last backslash"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseSpec(tc.in)
			if err == nil {
				t.Fatalf("ParseSpec(%q) = nil error, want %q", tc.in, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSpec(%q) = %q, want it to contain %q", tc.in, err, tc.wantErr)
			}
			if tc.hidden != "" && strings.Contains(err.Error(), tc.hidden) {
				t.Errorf("ParseSpec(%q) = %q: repeats %q", tc.in, err, tc.hidden)
			}
		})
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "", want: nil},
		{in: " \t ", want: nil},
		{in: "a", want: []string{"a"}},
		{in: "a b  c", want: []string{"a", "b", "c"}},
		{in: "'a b' c", want: []string{"a b", "c"}},
		{in: `"a b" c`, want: []string{"a b", "c"}},
		{in: `a'b c'd`, want: []string{"ab cd"}},
		{in: `'' ""`, want: []string{"", ""}},
		{in: `'$HOME' "$HOME" ~ *`, want: []string{"$HOME", "$HOME", "~", "*"}},
		{in: `'a\b'`, want: []string{`a\b`}},
		{in: `"a\"b" a\ b \'`, want: []string{`a"b`, "a b", "'"}},
		{in: `"it's"`, want: []string{"it's"}},
		{in: `'say "hi"'`, want: []string{`say "hi"`}},
		{in: "a\nb", want: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := splitArgs(tc.in)
			if err != nil {
				t.Fatalf("splitArgs(%q): %v", tc.in, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("splitArgs(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
