package interp

import "strings"

// leadingIndent is what IPython does to a cell before it runs it (its
// leading_empty_lines and leading_indent transforms): blank lines at the
// start go, and the whitespace that starts the first line is taken off
// every line that starts with it. Cells written inside indented code
// (most of E2B's own tests are) then run as Jupyter runs them.
func leadingIndent(code string) string {
	lines := strings.SplitAfter(code, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return code
	}
	first := lines[0]
	indent := first[:len(first)-len(strings.TrimLeft(first, " \t"))]
	if indent == "" {
		return strings.Join(lines, "")
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "")
}
