package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Template is a header value with {{secret:NAME}} references, as in
// "Bearer {{secret:API_KEY}}". It holds the text and names only; Render
// puts the values in.
type Template struct {
	text  string
	parts []part
	names []string // distinct, in order of appearance
}

// part is a piece of a template: literal text, or a reference to the
// secret ref when ref is set.
type part struct {
	lit string
	ref string
}

// refOpen and refClose delimit a reference; refKind names what it refers
// to.
const (
	refOpen  = "{{"
	refClose = "}}"
	refKind  = "secret:"
)

// ParseTemplate parses a header value with at least one {{secret:NAME}}.
// A "{{" that does not start a reference is an error, and so is a control
// character in the text around the references. An error never repeats
// the text, since a user may have pasted a value in it.
func ParseTemplate(text string) (Template, error) {
	t := Template{text: text}
	for off := 0; off < len(text); {
		i := strings.Index(text[off:], refOpen)
		if i < 0 {
			i = len(text) - off
		}
		if lit := text[off : off+i]; lit != "" {
			if err := checkHeaderText(lit); err != nil {
				return Template{}, fmt.Errorf("the template %w", err)
			}
			t.parts = append(t.parts, part{lit: lit})
		}
		off += i
		if off == len(text) {
			break
		}
		name, n, err := parseRef(text[off:])
		if err != nil {
			return Template{}, fmt.Errorf("byte %d of the template: %w", off, err)
		}
		t.parts = append(t.parts, part{ref: name})
		if !slices.Contains(t.names, name) {
			t.names = append(t.names, name)
		}
		off += n
	}
	if len(t.names) == 0 {
		return Template{}, errors.New("the template names no secret: put {{secret:NAME}} where the value goes")
	}
	return t, nil
}

// parseRef parses the reference at the start of s, which starts with "{{",
// and returns the secret's name and the reference's length.
func parseRef(s string) (name string, n int, err error) {
	ref, _, ok := strings.Cut(s[len(refOpen):], refClose)
	name, isSecret := strings.CutPrefix(ref, refKind)
	if !ok || !isSecret {
		return "", 0, errors.New(`"{{" does not start a {{secret:NAME}} reference`)
	}
	if err := CheckName(name); err != nil {
		return "", 0, err
	}
	return name, len(refOpen) + len(ref) + len(refClose), nil
}

// Names returns the names of the secrets the template refers to, each
// once, in order of appearance.
func (t Template) Names() []string { return slices.Clone(t.names) }

// String returns the template's text: references, never values.
func (t Template) String() string { return t.text }

// Render returns the header value with each reference replaced by its
// secret's value from lookup. A secret lookup does not know is an error,
// and so is a value that a header cannot carry (a line break, a NUL or
// another control character), since it could end the header and start
// another.
func (t Template) Render(lookup func(name string) ([]byte, bool)) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == "" {
			b.WriteString(p.lit)
			continue
		}
		v, ok := lookup(p.ref)
		if !ok {
			return "", fmt.Errorf("the template names secret %[1]s, which was not given: give --secret %[1]s", p.ref)
		}
		// A file written with echo ends in a newline no header means:
		// trailing line breaks go, as the mask ignores them too.
		v = bytes.TrimRight(v, "\r\n")
		if err := checkHeaderValue(v); err != nil {
			return "", fmt.Errorf("secret %s %w", p.ref, err)
		}
		b.Write(v)
	}
	return b.String(), nil
}

// checkHeaderText reports a control character in literal header text; the
// message follows "the template".
func checkHeaderText(s string) error {
	for i := 0; i < len(s); i++ {
		if isHeaderCTL(s[i]) {
			return fmt.Errorf("holds a control character (%q): a header value cannot", s[i])
		}
	}
	return nil
}

// checkHeaderValue reports what in a secret's value a header cannot
// carry; the message follows "secret NAME". It never shows the value.
func checkHeaderValue(v []byte) error {
	switch {
	case bytes.ContainsAny(v, "\r\n\x00"):
		return errors.New("holds a line break or a NUL byte, which a header cannot carry: store the value without them")
	case slices.ContainsFunc(v, isHeaderCTL):
		return errors.New("holds a control character, which a header cannot carry: store the value without it")
	}
	return nil
}

// isHeaderCTL reports whether c may not appear in a header value (RFC 9110
// field-value: visible ASCII, space, tab and bytes from 0x80 on).
func isHeaderCTL(c byte) bool {
	return (c < 0x20 && c != '\t') || c == 0x7f
}
