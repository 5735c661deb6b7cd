// Package docs reads boxer's Markdown documentation the way its tests need
// it: the fenced code blocks, the commands of a console block with the
// output shown under each, and a command's words as a shell splits them.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Pages are the documentation whose examples, flags and links are tested:
// README.md and docs/*.md, relative to the repository's root.
func Pages(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	return append([]string{filepath.Join(root, "README.md")}, pages...), nil
}

// Block is one fenced code block.
type Block struct {
	// Lang is the fence's info string, e.g. "console" or "sh".
	Lang string
	// Line is the 1-based line of the block's first content line.
	Line  int
	Lines []string
}

// Blocks returns every fenced code block of a Markdown file.
func Blocks(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var (
		out   []Block
		cur   *Block
		fence string
	)
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			// An indented fence (inside a list item) indents its content too.
			cur = &Block{Lang: strings.TrimSpace(trimmed[3:]), Line: i + 2}
		case cur != nil && trimmed == fence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.Lines = append(cur.Lines, line)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block never closed", path, cur.Line-1)
	}
	for i := range out {
		out[i].Lines = dedent(out[i].Lines)
	}
	return out, nil
}

// dedent removes the indentation every non-blank line shares.
func dedent(lines []string) []string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	if indent <= 0 {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent {
			out[i] = l[indent:]
		}
	}
	return out
}

// Command is one command of a block: in a console block, a "$ " line with
// the lines that continue it (an open quote or a trailing backslash) and
// the output shown under it; in a sh block, a line with its continuations.
type Command struct {
	Line   int
	Text   string
	Output []string
}

// Commands splits a console block into its "$ " commands; lines before the
// first prompt are an error. Other blocks are split into shell commands,
// comments and blank lines dropped.
func Commands(b Block) ([]Command, error) {
	var out []Command
	console := b.Lang == "console"
	for i := 0; i < len(b.Lines); i++ {
		line := b.Lines[i]
		start := b.Line + i
		text, isCmd := strings.CutPrefix(line, "$ ")
		if console && !isCmd {
			if len(out) == 0 {
				return nil, fmt.Errorf("line %d: output before any \"$ \" command", start)
			}
			out[len(out)-1].Output = append(out[len(out)-1].Output, line)
			continue
		}
		if !console {
			text = line
			if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
		}
		for continues(text) {
			i++
			if i == len(b.Lines) {
				return nil, fmt.Errorf("line %d: command never ends (an open quote or a trailing backslash)", start)
			}
			text += "\n" + b.Lines[i]
		}
		out = append(out, Command{Line: start, Text: text})
	}
	return out, nil
}

// continues reports whether a command goes on after text: a quote is
// open, or it ends with a backslash.
func continues(text string) bool {
	_, err := Words(text)
	return err != nil
}

// Words splits a command as a POSIX shell would into words, quotes
// removed; an operator (| ; & && || $( ) ...) is a word of its own and a
// comment ends the command. It does not expand anything.
func Words(text string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word is being built
	)
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(text[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(text[i+1 : i+1+j])
			in, i = true, i+1+j
		case c == '"':
			i++
			for ; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' && i+1 < len(text) && strings.IndexByte("\"\\$`\n", text[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(text[i])
			}
			if i == len(text) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			in = true
		case c == '\\':
			if i+1 == len(text) {
				return nil, fmt.Errorf("trailing backslash")
			}
			if text[i+1] != '\n' {
				cur.WriteByte(text[i+1])
				in = true
			}
			i++
		case c == '#' && !in:
			return append(words, ""), nil // a comment: the rest is not the command's
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case strings.IndexByte("|&;()<>", c) >= 0 || c == '$' && i+1 < len(text) && text[i+1] == '(':
			flush()
			op := string(c)
			if i+1 < len(text) && (text[i+1] == c || c == '$') {
				op += string(text[i+1])
				i++
			}
			words = append(words, op)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, nil
}

// Invocations returns the argument lists of every "boxer" a command runs:
// the words after each "boxer" at the start of a simple command, up to the
// next operator.
func Invocations(text string) ([][]string, error) {
	words, err := Words(text)
	if err != nil {
		return nil, err
	}
	var out [][]string
	start := true
	for i := 0; i < len(words); i++ {
		w := words[i]
		if isOperator(w) {
			start = true
			continue
		}
		if start && (w == "boxer" || strings.HasSuffix(w, "/boxer")) {
			var args []string
			for i++; i < len(words) && !isOperator(words[i]); i++ {
				args = append(args, words[i])
			}
			i--
			out = append(out, args)
			continue
		}
		// An assignment (S=...) or a prefix command keeps the next word in
		// command position.
		start = strings.Contains(w, "=") && !strings.HasPrefix(w, "-") || w == "sudo" || w == "exec" || w == "time"
	}
	return out, nil
}

func isOperator(w string) bool {
	switch w {
	case "|", "||", "&", "&&", ";", ";;", "(", ")", "$(", "", "<", ">", ">>", "<<", "<&", ">&":
		return true
	}
	return false
}

// Matches reports whether got (a command's output) is what a page shows
// (want): line by line, where a line "..." stands for any number of lines
// and "..." within a line for any text.
func Matches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if Matches(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && Matches(want[1:], got[1:])
}

func lineMatches(want, got string) bool {
	if !strings.Contains(want, "...") {
		return want == got
	}
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}
