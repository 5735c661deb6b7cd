package boxer_test

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/boxer-dev/boxer/internal/docs"
)

// TestNoPrivateContract: no tracked file names the private contract the
// project was first written against; what boxer does is said in its own
// documentation.
func TestNoPrivateContract(t *testing.T) {
	needle := []byte("SPEC" + ".md") // split, so that this file does not hold it
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(name)
		if err != nil {
			if os.IsNotExist(err) {
				continue // removed in the work tree
			}
			t.Fatal(err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, needle) {
				t.Errorf("%s:%d names %s", name, i+1, needle)
			}
		}
	}
}

// linkRE finds inline Markdown links and images: [text](target "title").
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks: every relative link of README.md, docs/*.md, BENCH.md and
// its journal (docs/bench/*.md) names a file that exists, and every
// #anchor a heading of its page.
func TestDocLinks(t *testing.T) {
	pages, err := docs.Pages(".")
	if err != nil {
		t.Fatal(err)
	}
	journal, err := filepath.Glob(filepath.Join("docs", "bench", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append(pages, "BENCH.md"), journal...)
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range proseLines(string(text)) {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", page, i+1, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if path.Ext(dest) != ".md" {
					t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", page, i+1, target)
					continue
				}
				if anchors[dest] == nil {
					if anchors[dest], err = headingAnchors(dest); err != nil {
						t.Fatal(err)
					}
				}
				if !anchors[dest][anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading whose anchor is #%s", page, i+1, target, dest, anchor)
				}
			}
		}
	}
}

// proseLines is a page's lines with the code blocks and inline code
// blanked, so that what looks like a link in code is not taken for one.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	var fence string
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence, lines[i] = t[:3], ""
		case fence != "":
			if t == fence {
				fence = ""
			}
			lines[i] = ""
		default:
			lines[i] = inlineCode.ReplaceAllString(l, "``")
		}
	}
	return lines
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// headingAnchors returns the anchors GitHub gives a page's headings:
// lower case, punctuation dropped, spaces as hyphens, and -1, -2 ... for
// repeats.
func headingAnchors(page string) (map[string]bool, error) {
	text, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]int{}
	var fence string
	for _, l := range strings.Split(string(text), "\n") {
		t := strings.TrimSpace(l)
		if fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			fence = t[:3]
			continue
		}
		if fence != "" {
			if t == fence {
				fence = ""
			}
			continue
		}
		if !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out, nil
}
