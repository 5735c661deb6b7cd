package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// defaultPort is the port of an entry that names none: egress is for HTTPS
// unless the operator or the user says otherwise.
const defaultPort = 443

// ParseRule parses one allowlist entry, HOST[:PORT]. HOST is a DNS name
// (example.com), a wildcard for its subdomains (*.example.com, not the apex),
// an address (192.0.2.1, [2001:db8::1] when a port follows) or a CIDR
// (10.0.0.0/8). PORT is one port or a comma list (80,443); 443 if absent.
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	entry := strings.TrimSpace(s)
	if entry == "" {
		return Rule{}, fmt.Errorf("%q: empty entry: give a host name, *.domain, an address or a CIDR, with an optional :port", s)
	}
	if strings.Contains(entry, "://") {
		return Rule{}, fmt.Errorf("%q: give the host alone, without a scheme or a path, as in example.com:443", s)
	}
	host, ports, hasPorts, err := splitHostPorts(entry)
	if err != nil {
		return Rule{}, fmt.Errorf("%q: %w", s, err)
	}
	if r.Ports, err = parsePorts(ports, hasPorts); err != nil {
		return Rule{}, fmt.Errorf("%q: %w", s, err)
	}
	if prefix, ok, err := parseIPHost(host); ok || err != nil {
		if err != nil {
			return Rule{}, fmt.Errorf("%q: %w", s, err)
		}
		r.Prefix = prefix
		return r, nil
	}
	if r.Name, r.Wildcard, err = parseNameHost(host); err != nil {
		return Rule{}, fmt.Errorf("%q: %w", s, err)
	}
	return r, nil
}

// splitHostPorts splits an entry into its host and its port list; hasPorts
// is false when the entry names no port. A bare IPv6 address has no port: a
// port after an IPv6 address needs brackets, as in [2001:db8::1]:443.
func splitHostPorts(entry string) (host, ports string, hasPorts bool, err error) {
	if rest, ok := strings.CutPrefix(entry, "["); ok {
		host, after, ok := strings.Cut(rest, "]")
		if !ok {
			return "", "", false, fmt.Errorf("missing ']' after an IPv6 address, as in [2001:db8::1]:443")
		}
		if !strings.Contains(host, ":") {
			return "", "", false, fmt.Errorf("brackets are for IPv6 addresses only, as in [2001:db8::1]:443")
		}
		if after == "" {
			return host, "", false, nil
		}
		ports, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", "", false, fmt.Errorf("expected ':port' after ']', as in [2001:db8::1]:443")
		}
		return host, ports, true, nil
	}
	if strings.Count(entry, ":") != 1 {
		return entry, "", false, nil
	}
	host, ports, _ = strings.Cut(entry, ":")
	return host, ports, true, nil
}

// parsePorts parses "443" or "80,443" into a sorted list without
// duplicates; an entry that names no port gets the default.
func parsePorts(s string, given bool) ([]uint16, error) {
	if !given {
		return []uint16{defaultPort}, nil
	}
	var ports []uint16
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port must be 1 to 65535 (one port or a comma list, as in :80,443)")
		}
		ports = append(ports, uint16(n))
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// parseIPHost parses an address or a CIDR. ok is false when host is neither
// (it may be a name); err is set when host is meant as one but is wrong.
func parseIPHost(host string) (prefix netip.Prefix, ok bool, err error) {
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if addr, _, _ := strings.Cut(host, "/"); err != nil && !strings.Contains(addr, ":") && strings.Trim(addr, "0123456789.") != "" {
			return netip.Prefix{}, true, fmt.Errorf("give the host alone, without a scheme or a path, as in example.com:443")
		}
		if err != nil {
			return netip.Prefix{}, true, fmt.Errorf("not a valid CIDR: give an address and a prefix length, as in 10.0.0.0/8")
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p.Masked() != p {
			return netip.Prefix{}, true, fmt.Errorf("host bits set in a CIDR: did you mean %s", p.Masked())
		}
		return p, true, nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}, false, nil
	}
	if a.Zone() != "" {
		return netip.Prefix{}, true, fmt.Errorf("an address with a zone (%%%s) is not allowed: give the address alone", a.Zone())
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true, nil
}

// parseNameHost parses a DNS name or a wildcard (*.example.com) into a
// lower-case name without a trailing dot.
func parseNameHost(host string) (name string, wildcard bool, err error) {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return "", false, entryNameError(host)
		}
	}
	name = normalName(host)
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		if strings.Count(rest, ".") < 1 {
			return "", false, fmt.Errorf("a wildcard needs a domain of two labels or more after '*.', as in *.example.com")
		}
		name, wildcard = rest, true
	}
	if strings.Contains(name, "*") {
		return "", false, fmt.Errorf("a wildcard must be the whole first label, as in *.example.com")
	}
	if err := checkName(name); err != nil {
		return "", false, err
	}
	return name, wildcard, nil
}

// checkName reports what is wrong with a lower-case DNS name (RFC 1123 host
// names: letters, digits and hyphens).
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("empty host name: give a host name, *.domain, an address or a CIDR")
	}
	if len(name) > 253 {
		return fmt.Errorf("host name longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return err
		}
	}
	// An all-numeric last label is no top-level domain: it is a mistyped
	// address (1.2.3.256) that must not pass as a name.
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("not a valid address or host name")
	}
	return nil
}

// checkLabel reports what is wrong with one label of a lower-case name.
func checkLabel(l string) error {
	if l == "" || len(l) > 63 {
		return fmt.Errorf("each label of a host name must be 1 to 63 characters")
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("a label of a host name must not start or end with '-'")
	}
	for _, c := range l {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("a host name may hold only letters, digits, '-' and '.'")
		}
	}
	if !validALabel(l) {
		return fmt.Errorf("label %s of the host name is not a valid IDNA A-label", l)
	}
	return nil
}

// ParsePolicy parses an allowlist, one entry a string; the error is the
// first entry's that does not parse.
func ParsePolicy(entries []string) (Policy, error) {
	p := make(Policy, 0, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		p = append(p, r)
	}
	return p, nil
}

// Strings returns the policy's entries as given.
func (p Policy) Strings() []string {
	s := make([]string, 0, len(p))
	for _, r := range p {
		s = append(s, r.Text)
	}
	return s
}

// Within reports an error naming the first rule of p that no rule of outer
// covers: a user's allowlist must stay inside the operator's.
func (p Policy) Within(outer Policy) error {
	for _, r := range p {
		if !slices.ContainsFunc(outer, func(o Rule) bool { return o.covers(r) }) {
			allowed := "which allows nothing"
			if len(outer) > 0 {
				allowed = "(" + strings.Join(outer.Strings(), ", ") + ")"
			}
			return fmt.Errorf("%q is not within the operator's allowlist %s", r.Text, allowed)
		}
	}
	return nil
}

// covers reports whether every destination r allows, o allows too.
func (o Rule) covers(r Rule) bool {
	for _, port := range r.Ports {
		if !slices.Contains(o.Ports, port) {
			return false
		}
	}
	switch {
	case r.Prefix.IsValid():
		return o.Prefix.IsValid() && o.Prefix.Bits() <= r.Prefix.Bits() && o.Prefix.Contains(r.Prefix.Addr())
	case o.Name == "":
		return false
	case o.Wildcard:
		return strings.HasSuffix(r.Name, "."+o.Name) || (r.Wildcard && r.Name == o.Name)
	default:
		return !r.Wildcard && r.Name == o.Name
	}
}

// matchesName reports whether name rule r covers the normalised name.
func (r Rule) matchesName(name string) bool {
	if r.Name == "" {
		return false
	}
	if r.Wildcard {
		return strings.HasSuffix(name, "."+r.Name)
	}
	return name == r.Name
}

// NameAllowed reports whether a name rule allows name on port. A name
// that is not printable ASCII, or has an xn-- label that is not an IDNA
// A-label, is allowed by none, whatever it folds into.
func (p Policy) NameAllowed(name string, port uint16) bool {
	if nameReason(name) != "" {
		return false
	}
	name = normalName(name)
	return slices.ContainsFunc(p, func(r Rule) bool {
		return r.matchesName(name) && slices.Contains(r.Ports, port)
	})
}

// NameKnown reports whether a name rule allows name on any port (see
// NameAllowed for the names none allows).
func (p Policy) NameKnown(name string) bool {
	if nameReason(name) != "" {
		return false
	}
	name = normalName(name)
	return slices.ContainsFunc(p, func(r Rule) bool { return r.matchesName(name) })
}

// AddrAllowed reports whether an address or CIDR rule allows a on port.
// Name rules never allow an address: that takes a resolved name.
func (p Policy) AddrAllowed(a netip.Addr, port uint16) bool {
	a = a.Unmap()
	return slices.ContainsFunc(p, func(r Rule) bool {
		return r.Prefix.IsValid() && r.Prefix.Contains(a) && slices.Contains(r.Ports, port)
	})
}

// addrKnown reports whether an address or CIDR rule allows a on any port.
func (p Policy) addrKnown(a netip.Addr) bool {
	a = a.Unmap()
	return slices.ContainsFunc(p, func(r Rule) bool {
		return r.Prefix.IsValid() && r.Prefix.Contains(a)
	})
}

// blockedRanges are the networks a name never leads to, with the reason
// Blocked gives, in the order they are checked.
var blockedRanges = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fc00::/7"), "unique local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Blocked returns why a is never reachable through a name (loopback,
// private, link-local, ...), or "" if it may be. An explicit address or CIDR
// rule opens all but the hard-blocked ones.
func Blocked(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.Unmap()
	for _, b := range blockedRanges {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	return ""
}

// hardBlocked returns why a is never reachable, even through an explicit
// address rule, or "": loopback, unspecified, multicast, broadcast and the
// host's own addresses.
func hardBlocked(a netip.Addr, local func(netip.Addr) bool) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.Unmap()
	switch r := Blocked(a); r {
	case "this network", "unspecified", "loopback", "multicast", "broadcast":
		return r
	}
	if local != nil && local(a) {
		return "the host's own address"
	}
	return ""
}
