package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// tablePrefix names boxer's nftables tables: one per sandbox with egress,
// family inet, removed with the sandbox. Nothing boxer does touches a
// table of another name.
const tablePrefix = "boxer_"

// rules are what a sandbox's table enforces on its host end.
type rules struct {
	table   string
	hostIf  string
	gateway netip.Addr
	proxy   uint16
	dns     uint16
}

// install loads the sandbox's table in one transaction:
//
//   - prerouting, nat (dstnat): DNS (UDP and TCP port 53, whatever the
//     address) is redirected to the resolver, every other TCP connection
//     to the proxy, both on the host end's address;
//   - prerouting, filter (after dstnat): what now goes to the proxy or the
//     resolver on the gateway passes, everything else from the sandbox is
//     refused (a TCP reset, else ICMP port unreachable) before routing, so
//     it holds whether the host forwards packets or not;
//   - input: the same, for what is addressed to the host itself;
//   - forward: a backstop for hosts that forward, both ways.
func (r rules) install() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("opening nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: r.table})
	chain := func(name string, typ nftables.ChainType, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		accept := nftables.ChainPolicyAccept
		return c.AddChain(&nftables.Chain{Name: name, Table: t, Type: typ, Hooknum: hook, Priority: prio, Policy: &accept})
	}
	nat := chain("nat", nftables.ChainTypeNAT, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest)
	pre := chain("pre", nftables.ChainTypeFilter, nftables.ChainHookPrerouting, nftables.ChainPriorityRef(*nftables.ChainPriorityNATDest+10))
	in := chain("in", nftables.ChainTypeFilter, nftables.ChainHookInput, nftables.ChainPriorityFilter)
	fwd := chain("fwd", nftables.ChainTypeFilter, nftables.ChainHookForward, nftables.ChainPriorityFilter)
	add := func(ch *nftables.Chain, exprs ...[]expr.Any) {
		var all []expr.Any
		for _, e := range exprs {
			all = append(all, e...)
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: all})
	}
	from := r.iif()
	for _, proto := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		add(nat, from, l4proto(proto), dport(53), redirect(r.dns))
	}
	add(nat, from, l4proto(unix.IPPROTO_TCP), redirect(r.proxy))
	for _, ch := range []*nftables.Chain{pre, in} {
		add(ch, from, r.toGateway(), l4proto(unix.IPPROTO_TCP), dport(r.proxy), verdict(expr.VerdictAccept))
		for _, proto := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
			add(ch, from, r.toGateway(), l4proto(proto), dport(r.dns), verdict(expr.VerdictAccept))
		}
		refuse(add, ch, from)
	}
	refuse(add, fwd, from)
	add(fwd, ifname(expr.MetaKeyOIFNAME, r.hostIf), verdict(expr.VerdictDrop))
	if err := c.Flush(); err != nil {
		return fmt.Errorf("loading nftables table %s: %w", r.table, err)
	}
	return nil
}

// removeTable deletes a table of boxer's; one already gone is not an error.
func removeTable(name string) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("opening nftables: %w", err)
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: name})
	if err := c.Flush(); err != nil && !strings.Contains(err.Error(), "no such file or directory") {
		return fmt.Errorf("removing nftables table %s: %w", name, err)
	}
	return nil
}

// tables lists boxer's tables.
func tables() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nftables: %w", err)
	}
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("listing nftables tables: %w", err)
	}
	var out []string
	for _, t := range ts {
		if strings.HasPrefix(t.Name, tablePrefix) {
			out = append(out, t.Name)
		}
	}
	return out, nil
}

// refuse adds to ch the rules that reject what match matches: a TCP
// reset for TCP, ICMP port unreachable for the rest (a prompt error in the
// program, where a drop would leave it hanging until its own timeout).
func refuse(add func(*nftables.Chain, ...[]expr.Any), ch *nftables.Chain, match []expr.Any) {
	add(ch, match, l4proto(unix.IPPROTO_TCP), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}})
	add(ch, match, []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH}})
}

func (r rules) iif() []expr.Any { return ifname(expr.MetaKeyIIFNAME, r.hostIf) }

func ifname(key expr.MetaKey, name string) []expr.Any {
	data := make([]byte, unix.IFNAMSIZ)
	copy(data, name)
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data},
	}
}

// toGateway matches IPv4 packets addressed to the host end.
func (r rules) toGateway() []expr.Any {
	a := r.gateway.As4()
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]},
	}
}

func l4proto(p byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}},
	}
}

// dport matches the destination port of TCP or UDP (both keep it at
// offset 2 of their header).
func dport(p uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(p)},
	}
}

func redirect(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1},
	}
}

func verdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }
