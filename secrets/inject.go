package secrets

import (
	"errors"
	"fmt"
	"net/netip"
	"net/textproto"
	"strings"
)

// Injection is one --inject rule: the egress proxy sets Header on the
// requests the run sends to Host, to Template rendered with the run's
// secrets, so that the run uses a credential it never sees.
type Injection struct {
	// Text is the rule as given.
	Text string
	// Host is a lower-case DNS name without a trailing dot.
	Host string
	// Header is canonical, as textproto.CanonicalMIMEHeaderKey makes it.
	Header   string
	Template Template
}

// String returns the rule as given.
func (in Injection) String() string { return in.Text }

// injectForm says what --inject accepts, for messages.
const injectForm = "give HOST:HEADER=TEMPLATE, as in api.example.com:Authorization=Bearer {{secret:API_KEY}}"

// ParseInjection parses an --inject rule, HOST:HEADER=TEMPLATE: the rule is
// split at its first ':' and the rest at its first '='. HOST is one DNS
// name of two labels or more (no port, wildcard or address); HEADER is an
// HTTP field name that does not frame the request or steer the connection;
// TEMPLATE is as ParseTemplate takes it.
func ParseInjection(text string) (Injection, error) {
	shown := fmt.Sprintf("--inject %q", shownRule(text))
	hostPart, rest, ok := strings.Cut(text, ":")
	if !ok {
		return Injection{}, fmt.Errorf("%s: %s", shown, injectForm)
	}
	host, err := parseHost(hostPart)
	if err != nil {
		return Injection{}, fmt.Errorf("%s: %w", shown, err)
	}
	if port, _, ok := strings.Cut(rest, ":"); ok && port != "" && strings.Trim(port, "0123456789") == "" {
		return Injection{}, fmt.Errorf("%s: give the host without a port: %s", shown, injectForm)
	}
	headerPart, tmpl, ok := strings.Cut(rest, "=")
	if !ok {
		return Injection{}, fmt.Errorf("%s: %s", shown, injectForm)
	}
	header, err := parseHeader(headerPart)
	if err != nil {
		return Injection{}, fmt.Errorf("%s: %w", shown, err)
	}
	t, err := ParseTemplate(tmpl)
	if err != nil {
		return Injection{}, fmt.Errorf("%s: %w", shown, err)
	}
	return Injection{Text: text, Host: host, Header: header, Template: t}, nil
}

// shownRule returns as much of a rule as a message may repeat: all of it
// when it is well formed, else the part before what may be a value pasted
// in place of a template or a header ("Authorization: Bearer sk-…").
func shownRule(text string) string {
	host, rest, ok := strings.Cut(text, ":")
	if !ok {
		if _, err := parseHost(text); err == nil {
			return text
		}
		return "…"
	}
	header, tmpl, ok := strings.Cut(rest, "=")
	if !ok || !isToken(header) {
		return host + ":…"
	}
	if _, err := ParseTemplate(tmpl); err != nil {
		return host + ":" + header + "=…"
	}
	return text
}

// parseHost parses the HOST of a rule into a lower-case name without a
// trailing dot.
func parseHost(s string) (string, error) {
	name := strings.TrimSuffix(strings.ToLower(s), ".")
	switch {
	case name == "":
		return "", fmt.Errorf("no host before ':': %s", injectForm)
	case strings.Contains(name, "*"):
		return "", errors.New("a wildcard is not allowed: give one host name per rule, as in api.example.com")
	case strings.HasPrefix(name, "["):
		return "", errors.New("an address is not allowed: give the host's DNS name, as in api.example.com")
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "", errors.New("an address is not allowed: give the host's DNS name, as in api.example.com")
	}
	if err := checkHostName(name); err != nil {
		return "", err
	}
	return name, nil
}

// checkHostName reports what is wrong with a lower-case DNS name: RFC 1123
// labels, 253 characters at most, and at least two labels, the last not
// all digits (it would be a mistyped address).
func checkHostName(name string) error {
	const want = "give a DNS name such as api.example.com"
	if len(name) > 253 {
		return fmt.Errorf("the host name is longer than 253 characters: %s", want)
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return fmt.Errorf("the host name has no dot: %s", want)
	}
	for _, l := range labels {
		if !isLabel(l) {
			return fmt.Errorf("the host name is not valid (each label 1 to 63 letters, digits and '-', not starting or ending with '-'): %s", want)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("the host name ends in a number: %s", want)
	}
	return nil
}

// isLabel reports whether l is a valid label of a lower-case host name.
func isLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// refusedHeaders are the headers a rule may not set: they frame the
// request or steer the connection or the proxy, which are the proxy's
// business and, set by a rule, could smuggle a second request.
var refusedHeaders = map[string]bool{
	"Host":              true,
	"Content-Length":    true,
	"Transfer-Encoding": true,
	"Connection":        true,
	"Keep-Alive":        true,
	"Te":                true,
	"Trailer":           true,
	"Upgrade":           true,
	"Expect":            true,
}

// parseHeader parses the HEADER of a rule into its canonical form.
func parseHeader(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("no header before '=': %s", injectForm)
	}
	if !isToken(s) {
		// Not repeated: it may hold a pasted "Authorization: Bearer …".
		return "", errors.New("the header name is not valid: use letters, digits and '-', as in Authorization")
	}
	h := textproto.CanonicalMIMEHeaderKey(s)
	if refusedHeaders[h] || strings.HasPrefix(h, "Proxy-") {
		return "", fmt.Errorf("header %s is not one a rule may set (it frames the request or steers the connection): inject a header such as Authorization", h)
	}
	return h, nil
}

// isToken reports whether s is an RFC 9110 token, as a field name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}

// isTchar reports whether c is an RFC 9110 tchar.
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
