package egress

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// redirectPort adds, in the namespace at path, a rule that redirects TCP to
// port from (on loopback, from the namespace itself) to port to, as the
// gateway's rules redirect a sandbox's TCP to its proxy.
func redirectPort(t *testing.T, path string, from, to uint16) {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatalf("nftables: %v", err)
	}
	table := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "boxer_test"})
	chain := c.AddChain(&nftables.Chain{
		Name: "out", Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest,
	})
	c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(from)},
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(to)},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	if err := c.Flush(); err != nil {
		t.Skipf("cannot add a redirect rule here: %v", err)
	}
}

// A connection redirected by nftables gives the address it was sent to.
func TestOriginalDst(t *testing.T) {
	path, ln := newNetns(t)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	redirectPort(t, path, 9, port)
	dial, err := NetnsDialer(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", "127.0.0.1:9")
	if err != nil {
		t.Fatalf("dialing the redirected port: %v", err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dst, err := originalDst(s)
	if err != nil {
		t.Fatalf("originalDst: %v", err)
	}
	if want := netip.MustParseAddrPort("127.0.0.1:9"); dst != want {
		t.Errorf("originalDst = %v, want %v", dst, want)
	}
	if _, err := originalDst(&net.UDPConn{}); err == nil {
		t.Error("originalDst of a UDP conn worked, want an error")
	}
}
