package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Names are compared as DNS compares them: byte for byte, ASCII letters
// folded, nothing else. Unicode's rules would fold names a server and a
// registry take as other names: strings.ToLower makes "pypİ.test" (U+0130)
// and "\u212Aey.test" (the Kelvin sign) "pypi.test" and "key.test", and Go's
// HTTP client sends the first upstream as Host xn--pyp-hua.test, a name
// anyone may register.

// The reasons a name a program sent (SNI, Host, CONNECT target) is refused
// before any entry is looked at.
const (
	reasonNotASCII  = "name is not printable ASCII: an internationalised name is sent as its xn-- A-labels"
	reasonBadALabel = "name has an xn-- label that is not a valid IDNA A-label"
)

// normalName lower-cases the ASCII letters of a name and drops its trailing
// dot; any other byte stays as it is, so a name that is not ASCII never
// equals an entry.
func normalName(name string) string {
	return strings.TrimSuffix(lowerASCII(name), ".")
}

// lowerASCII maps A-Z to a-z and leaves every other byte alone.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// equalFoldASCII reports whether a and b are equal with ASCII letters
// folded (strings.EqualFold would also fold the Kelvin sign into k).
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// hostName returns the name of a Host header, an SNI or a CONNECT target,
// lower-case and without its port and trailing dot; "" for an address,
// which is no name: the destination address decides alone. reason is set
// when the name is not printable ASCII or has an xn-- label that is not a
// valid A-label; name is then the name as sent, escaped, for the record.
func hostName(host string) (name, reason string) {
	host = hostPart(host)
	if _, err := netip.ParseAddr(host); err == nil {
		return "", ""
	}
	if reason := nameReason(host); reason != "" {
		return printable(host), reason
	}
	return normalName(host), ""
}

// nameReason returns why a name a program sent can match no entry as
// DNS would read it, or "" if it can be compared.
func nameReason(host string) string {
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f {
			return reasonNotASCII
		}
	}
	for _, l := range strings.Split(normalName(host), ".") {
		if !validALabel(l) {
			return reasonBadALabel
		}
	}
	return ""
}

// validALabel reports whether a lower-case label that starts with "xn--"
// is an IDNA A-label: its Unicode form is valid and encodes back to it.
// Any other label is not an A-label and passes.
func validALabel(l string) bool {
	if !strings.HasPrefix(l, "xn--") {
		return true
	}
	u, err := idna.Lookup.ToUnicode(l)
	if err != nil {
		return false
	}
	a, err := idna.Lookup.ToASCII(u)
	return err == nil && a == l
}

// printable returns s with every byte that is not printable ASCII escaped
// as Go escapes it (pyp\u0130.test), so that a refused name is recorded as
// sent without writing it raw into a report or a log.
func printable(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// hostPart returns a Host header or an SNI without its port and an IPv6
// address's brackets.
func hostPart(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// entryNameError returns the error of an allowlist entry's name that is
// not ASCII, with its A-label form when it has one.
func entryNameError(host string) error {
	if a, err := idna.Registration.ToASCII(strings.TrimSuffix(host, ".")); err == nil {
		return fmt.Errorf("a host name must be ASCII: give an internationalised name as its A-labels, as in %s", lowerASCII(a))
	}
	return fmt.Errorf("a host name must be ASCII: give an internationalised name as its A-labels (xn--...)")
}
