//go:build linux

package main

// The host settings a bench run must leave as it found them.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/google/nftables"
)

// hostFiles are the host-wide switches that a container engine started by
// the bench could turn on (dockerd turns ip_forward on by default and
// leaves it on after it stops): a bench run must not make a hardened
// server a router, or open loopback to routed traffic.
var hostFiles = []string{
	"/proc/sys/net/ipv4/ip_forward",
	"/proc/sys/net/ipv6/conf/all/forwarding",
	"/proc/sys/net/ipv6/conf/default/forwarding",
	"/proc/sys/net/ipv4/conf/all/route_localnet",
	"/proc/sys/net/bridge/bridge-nf-call-iptables",
	"/proc/sys/net/bridge/bridge-nf-call-ip6tables",
}

// hostRulesets are the commands whose output is the host's legacy
// firewall, each read only where its command exists (nftables is read
// through netlink, nftRuleset).
var hostRulesets = [][]string{
	{"iptables-legacy-save"},
	{"ip6tables-legacy-save"},
}

// hostSettings is what hostFiles and hostRulesets read at one moment, by
// name; a missing file or command is left out.
type hostSettings map[string]string

// readHostSettings reads every setting the bench must not change.
func readHostSettings() hostSettings {
	s := hostSettings{}
	for _, f := range hostFiles {
		if b, err := os.ReadFile(f); err == nil {
			s[f] = strings.TrimSpace(string(b))
		}
	}
	if r, err := nftRuleset(); err == nil {
		s["nftables"] = r
	}
	for _, argv := range hostRulesets {
		path, err := exec.LookPath(argv[0])
		if err != nil {
			continue
		}
		out, err := exec.Command(path, argv[1:]...).Output()
		if err != nil {
			continue
		}
		s[strings.Join(argv, " ")] = string(stripComments(out))
	}
	return s
}

// nftRuleset lists every nftables table, chain and rule (by handle, which
// changes with every rule added) of this network namespace, a line each.
func nftRuleset() (string, error) {
	c, err := nftables.New()
	if err != nil {
		return "", err
	}
	defer c.CloseLasting()
	tables, err := c.ListTables()
	if err != nil {
		return "", err
	}
	var lines []string
	for _, t := range tables {
		lines = append(lines, fmt.Sprintf("table %d %s", t.Family, t.Name))
	}
	chains, err := c.ListChains()
	if err != nil {
		return "", err
	}
	for _, ch := range chains {
		lines = append(lines, fmt.Sprintf("chain %d %s %s", ch.Table.Family, ch.Table.Name, ch.Name))
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return "", err
		}
		for _, r := range rules {
			lines = append(lines, fmt.Sprintf("rule %d %s %s handle %d (%d expressions)", ch.Table.Family, ch.Table.Name, ch.Name, r.Handle, len(r.Exprs)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

// stripComments drops the lines iptables-save stamps with the time, so
// that two reads of the same rules compare equal.
func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("#")) {
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}

// changedSince names every setting that differs between before and s, one
// line each; nil when none does.
func (s hostSettings) changedSince(before hostSettings) []string {
	var changed []string
	for name, was := range before {
		now, ok := s[name]
		switch {
		case !ok:
			changed = append(changed, fmt.Sprintf("%s: could be read before, not now", name))
		case now == was:
		case strings.HasPrefix(name, "/proc/"):
			changed = append(changed, fmt.Sprintf("%s: %s before, %s now", name, was, now))
		default:
			changed = append(changed, fmt.Sprintf("%s: the rules changed:\n%s", name, lineDiff(was, now)))
		}
	}
	for name := range s {
		if _, ok := before[name]; !ok {
			changed = append(changed, fmt.Sprintf("%s: could not be read before, now can", name))
		}
	}
	sort.Strings(changed)
	return changed
}

// lineDiff lists the lines only in a ("-") and only in b ("+").
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		for ; n > 0; n-- {
			out = append(out, "  - "+l)
		}
		for ; n < 0; n++ {
			out = append(out, "  + "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// checkHost fails naming each setting that differs from before, with when
// it was seen ("after the engines started", "at the end").
func checkHost(before hostSettings, when string) error {
	changed := readHostSettings().changedSince(before)
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("the bench changed host settings (seen %s); restore them by hand:\n%s", when, strings.Join(changed, "\n"))
}
