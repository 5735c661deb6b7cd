package egress

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in       string
		name     string
		wildcard bool
		prefix   string
		ports    []uint16
	}{
		{in: "example.com", name: "example.com", ports: []uint16{443}},
		{in: "API.Example.COM.", name: "api.example.com", ports: []uint16{443}},
		{in: "example.com:80", name: "example.com", ports: []uint16{80}},
		{in: "example.com:443,80,443", name: "example.com", ports: []uint16{80, 443}},
		{in: "localhost", name: "localhost", ports: []uint16{443}},
		{in: "a-b.x9.io:65535", name: "a-b.x9.io", ports: []uint16{65535}},
		{in: "*.example.com", name: "example.com", wildcard: true, ports: []uint16{443}},
		{in: "*.Example.co.uk.:8443", name: "example.co.uk", wildcard: true, ports: []uint16{8443}},
		{in: "203.0.113.7", prefix: "203.0.113.7/32", ports: []uint16{443}},
		{in: "203.0.113.7:22", prefix: "203.0.113.7/32", ports: []uint16{22}},
		{in: "10.0.0.0/8", prefix: "10.0.0.0/8", ports: []uint16{443}},
		{in: "10.0.0.0/8:5432", prefix: "10.0.0.0/8", ports: []uint16{5432}},
		{in: "2001:db8::1", prefix: "2001:db8::1/128", ports: []uint16{443}},
		{in: "[2001:db8::1]", prefix: "2001:db8::1/128", ports: []uint16{443}},
		{in: "[2001:db8::1]:80,443", prefix: "2001:db8::1/128", ports: []uint16{80, 443}},
		{in: "2001:db8::/32", prefix: "2001:db8::/32", ports: []uint16{443}},
		{in: "[2001:db8::/32]:53", prefix: "2001:db8::/32", ports: []uint16{53}},
		{in: "::ffff:203.0.113.7", prefix: "203.0.113.7/32", ports: []uint16{443}},
		{in: "::ffff:10.0.0.0/104", prefix: "10.0.0.0/8", ports: []uint16{443}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRule(tc.in)
			if err != nil {
				t.Fatalf("ParseRule(%q) = %v, want no error", tc.in, err)
			}
			if r.Text != tc.in {
				t.Errorf("Text = %q, want %q", r.Text, tc.in)
			}
			if r.Name != tc.name || r.Wildcard != tc.wildcard {
				t.Errorf("Name, Wildcard = %q, %v, want %q, %v", r.Name, r.Wildcard, tc.name, tc.wildcard)
			}
			var want netip.Prefix
			if tc.prefix != "" {
				want = netip.MustParsePrefix(tc.prefix)
			}
			if r.Prefix != want {
				t.Errorf("Prefix = %v, want %v", r.Prefix, want)
			}
			if !slices.Equal(r.Ports, tc.ports) {
				t.Errorf("Ports = %v, want %v", r.Ports, tc.ports)
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", `"": empty entry: give a host name, *.domain, an address or a CIDR, with an optional :port`},
		{"  ", "empty entry"},
		{":443", "empty host name"},
		{"example.com:0", `"example.com:0": port must be 1 to 65535`},
		{"example.com:65536", "port must be 1 to 65535"},
		{"example.com:", "port must be 1 to 65535"},
		{"example.com:https", "port must be 1 to 65535"},
		{"example.com:80,", "port must be 1 to 65535"},
		{"example.com:-1", "port must be 1 to 65535"},
		{"a.*.com", `"a.*.com": a wildcard must be the whole first label, as in *.example.com`},
		{"*a.com", "a wildcard must be the whole first label"},
		{"*", "a wildcard must be the whole first label"},
		{"*.*.example.com", "a wildcard must be the whole first label"},
		{"*.com", `"*.com": a wildcard needs a domain of two labels or more after '*.'`},
		{"*.", "a wildcard must be the whole first label"},
		{"-a.com", "must not start or end with '-'"},
		{"a-.com", "must not start or end with '-'"},
		{"a..com", "each label of a host name must be 1 to 63 characters"},
		{".com", "each label of a host name must be 1 to 63 characters"},
		{strings.Repeat("a", 64) + ".com", "1 to 63 characters"},
		{strings.Repeat("abcdefghi.", 26) + "com", "longer than 253 characters"},
		{"exa_mple.com", "only letters, digits, '-' and '.'"},
		{"ex ample.com", "only letters, digits, '-' and '.'"},
		{"éxample.com", "a host name must be ASCII"},
		{"http://example.com", "give the host alone, without a scheme or a path"},
		{"example.com/api", "give the host alone, without a scheme or a path"},
		{"1.2.3.256", "not a valid address or host name"},
		{"10.0.0.1/8", "host bits set in a CIDR: did you mean 10.0.0.0/8"},
		{"10.0.0.0/33", "not a valid CIDR"},
		{"10.0.0.0/8:0", "port must be 1 to 65535"},
		{"[2001:db8::1", "missing ']'"},
		{"[2001:db8::1]443", "expected ':port' after ']'"},
		{"[example.com]:443", "brackets are for IPv6 addresses only"},
		{"fe80::1%eth0", "an address with a zone (%eth0) is not allowed"},
		{"a:b:c", "only letters, digits"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseRule(tc.in)
			if err == nil {
				t.Fatalf("ParseRule(%q) = nil error, want %q", tc.in, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseRule(%q) = %q, want it to contain %q", tc.in, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), `"`) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseRule(%q) = %q, want one line that quotes the entry first", tc.in, err)
			}
		})
	}
}

func mustPolicy(t *testing.T, entries ...string) Policy {
	t.Helper()
	p, err := ParsePolicy(entries)
	if err != nil {
		t.Fatalf("ParsePolicy(%q): %v", entries, err)
	}
	return p
}

func TestParsePolicy(t *testing.T) {
	entries := []string{"a.com", "*.b.com:80", "10.0.0.0/8:5432"}
	p := mustPolicy(t, entries...)
	if got := p.Strings(); !slices.Equal(got, entries) {
		t.Errorf("Strings() = %q, want %q", got, entries)
	}
	if _, err := ParsePolicy([]string{"a.com", "b.com:0"}); err == nil || !strings.HasPrefix(err.Error(), `"b.com:0"`) {
		t.Errorf("ParsePolicy with a bad entry = %v, want the entry's error", err)
	}
	if p, err := ParsePolicy(nil); err != nil || len(p) != 0 {
		t.Errorf("ParsePolicy(nil) = %v, %v, want an empty policy", p, err)
	}
}

func TestWithin(t *testing.T) {
	outer := []string{"a.com", "*.b.com:80,443", "10.0.0.0/8:5432", "2001:db8::/32"}
	tests := []struct {
		inner []string
		want  string // "" when within
	}{
		{nil, ""},
		{[]string{"a.com"}, ""},
		{[]string{"A.com.:443"}, ""},
		{[]string{"x.b.com:80"}, ""},
		{[]string{"y.x.b.com:80,443"}, ""},
		{[]string{"*.b.com:80"}, ""},
		{[]string{"*.x.b.com"}, ""},
		{[]string{"10.1.2.3:5432", "10.1.0.0/16:5432"}, ""},
		{[]string{"[2001:db8::1]"}, ""},
		{[]string{"a.com:80"}, `"a.com:80" is not within the operator's allowlist (a.com, *.b.com:80,443, 10.0.0.0/8:5432, 2001:db8::/32)`},
		{[]string{"a.com", "x.com:443"}, `"x.com:443" is not within`},
		{[]string{"*.a.com"}, `"*.a.com" is not within`},
		{[]string{"b.com:80"}, `"b.com:80" is not within`},
		{[]string{"x.b.com:22"}, `"x.b.com:22" is not within`},
		{[]string{"xb.com:80"}, `"xb.com:80" is not within`},
		{[]string{"10.0.0.0/7:5432"}, `"10.0.0.0/7:5432" is not within`},
		{[]string{"11.0.0.1:5432"}, `"11.0.0.1:5432" is not within`},
		{[]string{"10.1.2.3"}, `"10.1.2.3" is not within`},
		{[]string{"a.com:443,80"}, `"a.com:443,80" is not within`},
		{[]string{"203.0.113.1"}, `"203.0.113.1" is not within`},
	}
	o := mustPolicy(t, outer...)
	for _, tc := range tests {
		t.Run(strings.Join(tc.inner, " "), func(t *testing.T) {
			err := mustPolicy(t, tc.inner...).Within(o)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Within = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Within = %v, want %q", err, tc.want)
			}
		})
	}
	if err := mustPolicy(t, "a.com").Within(nil); err == nil || !strings.Contains(err.Error(), "which allows nothing") {
		t.Errorf("Within(empty) = %v, want an error saying the operator allows nothing", err)
	}
}

func TestNameAllowed(t *testing.T) {
	p := mustPolicy(t, "a.com", "*.b.com:80,8080", "10.0.0.0/8:5432")
	tests := []struct {
		name  string
		port  uint16
		want  bool
		known bool
	}{
		{"a.com", 443, true, true},
		{"A.COM.", 443, true, true},
		{"a.com", 80, false, true},
		{"x.a.com", 443, false, false},
		{"b.com", 80, false, false},
		{"x.b.com", 80, true, true},
		{"y.x.b.com", 8080, true, true},
		{"x.b.com", 443, false, true},
		{"xb.com", 80, false, false},
		{"10.0.0.1", 5432, false, false},
		{"", 443, false, false},
	}
	for _, tc := range tests {
		if got := p.NameAllowed(tc.name, tc.port); got != tc.want {
			t.Errorf("NameAllowed(%q, %d) = %v, want %v", tc.name, tc.port, got, tc.want)
		}
		if got := p.NameKnown(tc.name); got != tc.known {
			t.Errorf("NameKnown(%q) = %v, want %v", tc.name, got, tc.known)
		}
	}
}

func TestAddrAllowed(t *testing.T) {
	p := mustPolicy(t, "a.com", "10.0.0.0/8:5432", "203.0.113.7:22,443", "2001:db8::/32")
	tests := []struct {
		addr string
		port uint16
		want bool
	}{
		{"10.1.2.3", 5432, true},
		{"::ffff:10.1.2.3", 5432, true},
		{"10.1.2.3", 443, false},
		{"11.0.0.1", 5432, false},
		{"203.0.113.7", 22, true},
		{"203.0.113.7", 443, true},
		{"203.0.113.8", 443, false},
		{"2001:db8::5", 443, true},
		{"2001:db9::5", 443, false},
	}
	for _, tc := range tests {
		if got := p.AddrAllowed(netip.MustParseAddr(tc.addr), tc.port); got != tc.want {
			t.Errorf("AddrAllowed(%s, %d) = %v, want %v", tc.addr, tc.port, got, tc.want)
		}
	}
}

func TestBlocked(t *testing.T) {
	tests := []struct {
		addr string
		want string
		hard string
	}{
		{"203.0.113.10", "", ""},
		{"198.51.100.1", "", ""},
		{"8.8.8.8", "", ""},
		{"2001:db8::1", "", ""},
		{"2606:4700::1111", "", ""},
		{"0.0.0.0", "this network", "this network"},
		{"0.1.2.3", "this network", "this network"},
		{"127.0.0.1", "loopback", "loopback"},
		{"127.255.0.9", "loopback", "loopback"},
		{"::1", "loopback", "loopback"},
		{"::ffff:127.0.0.1", "loopback", "loopback"},
		{"::", "unspecified", "unspecified"},
		{"10.0.0.5", "private", ""},
		{"172.16.0.1", "private", ""},
		{"172.31.255.255", "private", ""},
		{"172.32.0.1", "", ""},
		{"192.168.1.1", "private", ""},
		{"::ffff:192.168.1.1", "private", ""},
		{"169.254.169.254", "link-local (cloud metadata)", ""},
		{"fe80::1", "link-local", ""},
		{"100.64.0.1", "carrier-grade NAT", ""},
		{"100.127.255.255", "carrier-grade NAT", ""},
		{"100.128.0.1", "", ""},
		{"fd00::1", "unique local", ""},
		{"fc00::1", "unique local", ""},
		{"224.0.0.1", "multicast", "multicast"},
		{"239.255.255.250", "multicast", "multicast"},
		{"ff02::1", "multicast", "multicast"},
		{"255.255.255.255", "broadcast", "broadcast"},
		{"240.0.0.1", "reserved", ""},
		{"198.51.100.99", "", "the host's own address"},
	}
	local := func(a netip.Addr) bool { return a == netip.MustParseAddr("198.51.100.99") }
	for _, tc := range tests {
		a := netip.MustParseAddr(tc.addr)
		if got := Blocked(a); got != tc.want {
			t.Errorf("Blocked(%s) = %q, want %q", tc.addr, got, tc.want)
		}
		if got := hardBlocked(a, local); got != tc.hard {
			t.Errorf("hardBlocked(%s) = %q, want %q", tc.addr, got, tc.hard)
		}
	}
	if got := Blocked(netip.Addr{}); got == "" {
		t.Errorf("Blocked(invalid) = %q, want a reason", got)
	}
}
