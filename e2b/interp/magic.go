package interp

// IPython's shell escapes in a python cell: `!cmd` lines run in a shell.

import (
	"strconv"
	"strings"
)

// shellRun is the Python a `!cmd` line becomes: the command runs in a
// shell in the cell's working directory and environment, and its output
// is the cell's (stdout to stdout, stderr to stderr), as IPython's
// get_ipython().system prints it. It names nothing in the cell's globals.
const shellRun = `(lambda r: (print(r.stdout, end=''), print(r.stderr, end='', file=__import__('sys').stderr)))(__import__('subprocess').run(%s, shell=True, stdin=__import__('subprocess').DEVNULL, capture_output=True, text=True, errors='replace'))`

// shellEscapes turns IPython's shell escapes into Python: a line whose
// first character after its indentation is `!` runs the rest of the line
// in /bin/sh (Jupyter's `!pwd`, `!pip install x`). A `!` cannot start a
// Python statement, so no valid cell changes, except a line inside a
// triple-quoted string, which is left alone. Not translated, as IPython
// would: `!!cmd` and `x = !cmd` (the output as a list), and `$var` or
// `{expr}` in the command (the shell sees them as written).
func shellEscapes(code string) string {
	if !strings.Contains(code, "!") {
		return code
	}
	lines := strings.SplitAfter(code, "\n")
	var quote string // the triple quote a string opened on an earlier line left open
	continued := false
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		rest := strings.TrimLeft(body, " \t")
		if quote == "" && !continued && strings.HasPrefix(rest, "!") && !strings.HasPrefix(rest, "!!") {
			indent := body[:len(body)-len(rest)]
			cmd := strings.TrimSpace(rest[1:])
			lines[i] = indent + strings.Replace(shellRun, "%s", strconv.Quote(cmd), 1) + l[len(body):]
			continue
		}
		quote = openQuote(body, quote)
		continued = quote == "" && strings.HasSuffix(body, "\\")
	}
	return strings.Join(lines, "")
}

// openQuote follows the triple-quoted strings on one line: given the one
// open when the line starts (or ""), it returns the one open at its end.
// Single-quoted strings and comments are skipped well enough for that.
func openQuote(line, quote string) string {
	for i := 0; i < len(line); {
		if quote != "" {
			j := strings.Index(line[i:], quote)
			if j < 0 {
				return quote
			}
			i += j + 3
			quote = ""
			continue
		}
		switch c := line[i]; {
		case c == '#':
			return ""
		case strings.HasPrefix(line[i:], `"""`) || strings.HasPrefix(line[i:], `'''`):
			quote = line[i : i+3]
			i += 3
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(line) && line[j] != c {
				if line[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		default:
			i++
		}
	}
	return quote
}
