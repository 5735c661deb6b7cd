package docs

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`boxer run --lang python -c 'print("a b")'`, []string{"boxer", "run", "--lang", "python", "-c", `print("a b")`}},
		{`S=$(boxer session create --lang python)`, []string{"S=", "$(", "boxer", "session", "create", "--lang", "python", ")"}},
		{`echo "a \"b\"" | boxer run --lang bash # a comment's`, []string{"echo", `a "b"`, "|", "boxer", "run", "--lang", "bash", ""}},
		{"boxer run \\\n  --json", []string{"boxer", "run", "--json"}},
		{`a || echo "exit $?"`, []string{"a", "||", "echo", "exit $?"}},
	}
	for _, tc := range tests {
		got, err := Words(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`-c 'print(1)`, `"open`, `trailing \`} {
		if _, err := Words(bad); err == nil {
			t.Errorf("Words(%q) accepted an unfinished command", bad)
		}
	}
}

func TestCommands(t *testing.T) {
	b := Block{Lang: "console", Line: 10, Lines: []string{
		"$ boxer run --lang python -c '",
		"print(1)'",
		"1",
		"$ S=$(boxer session create --lang python)",
		"$ boxer session rm $S",
	}}
	cmds, err := Commands(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 3 || cmds[0].Line != 10 || cmds[0].Text != "boxer run --lang python -c '\nprint(1)'" || !slices.Equal(cmds[0].Output, []string{"1"}) || cmds[2].Line != 14 {
		t.Errorf("Commands = %+v", cmds)
	}
	invs, err := Invocations(cmds[1].Text)
	if err != nil || len(invs) != 1 || !slices.Equal(invs[0], []string{"session", "create", "--lang", "python"}) {
		t.Errorf("Invocations(%q) = %q, %v", cmds[1].Text, invs, err)
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"1"}, []string{"1"}, true},
		{[]string{"1"}, []string{"2"}, false},
		{nil, []string{"x"}, false},
		{[]string{`{"id":"bx-...","status":"exited",...}`}, []string{`{"id":"bx-0123","status":"exited","x":1}`}, true},
		{[]string{`{"id":"bx-...","status":"exited",...}`}, []string{`{"id":"bx-0123","status":"oom","x":1}`}, false},
		{[]string{"a", "...", "z"}, []string{"a", "b", "c", "z"}, true},
		{[]string{"a", "...", "z"}, []string{"a", "z"}, true},
		{[]string{"a", "...", "z"}, []string{"a", "b"}, false},
	}
	for _, tc := range tests {
		if got := Matches(tc.want, tc.got); got != tc.ok {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
}
