package interp

import "testing"

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
