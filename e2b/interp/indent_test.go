package interp

import (
	"strconv"
	"strings"
	"testing"
)

func TestLeadingIndent(t *testing.T) {
	for in, want := range map[string]string{
		"x = 1\nx": "x = 1\nx",
		"\n\n    x = 1\n    if x:\n        print(x)\n": "x = 1\nif x:\n    print(x)\n",
		"  a\n b\n  c":               "a\n b\nc",
		"\tx = 1\n\ty = 2":           "x = 1\ny = 2",
		"   \n":                      "   \n",
		"":                           "",
		"    s = '''\n    kept\n'''": "s = '''\nkept\n'''",
	} {
		if got := leadingIndent(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestShellEscapes(t *testing.T) {
	run := func(indent, cmd string) string {
		return indent + strings.Replace(shellRun, "%s", strconv.Quote(cmd), 1)
	}
	for in, want := range map[string]string{
		"!pwd":                      run("", "pwd"),
		"x = 1\n!echo \"$HOME\"\nx": "x = 1\n" + run("", `echo "$HOME"`) + "\nx",
		"if True:\n    ! ls -l\n":   "if True:\n" + run("    ", "ls -l") + "\n",
		"print('!x')\nx != 1":       "print('!x')\nx != 1",
		"s = '''\n!kept\n'''\n!ls":  "s = '''\n!kept\n'''\n" + run("", "ls"),
		"s = \"\"\"a\"\"\"\n!ls":    "s = \"\"\"a\"\"\"\n" + run("", "ls"),
		"x = 1 + \\\n!kept":         "x = 1 + \\\n!kept",
		"!!ls":                      "!!ls",
		"# '''\n!ls":                "# '''\n" + run("", "ls"),
		"s = 'it''s'\n!ls":          "s = 'it''s'\n" + run("", "ls"),
		"!pwd\r\n":                  run("", "pwd") + "\r\n",
	} {
		if got := shellEscapes(in); got != want {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want)
		}
	}
}
