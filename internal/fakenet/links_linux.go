package fakenet

// The fake internet's namespace: its links and addresses, ready before a
// server listens.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/boxer-dev/boxer/internal/nlretry"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// newNamespace makes a network namespace and bind-mounts it at n.Netns.
func (n *Net) newNamespace() error {
	f, err := os.OpenFile(n.Netns, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("creating namespace mount point: %w", err)
	}
	n.created = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("creating namespace mount point: %w", err)
	}
	err = onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unsharing network namespace: %w", err)
		}
		if err := unix.Mount("/proc/thread-self/ns/net", n.Netns, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting network namespace at %s: %w", n.Netns, err)
		}
		n.mounted = true
		return nil
	})
	return err
}

// setupLinks brings loopback up and puts every address of the zone but
// loopback's on a dummy link. There is no route out: a packet to any other address fails
// at once with "network is unreachable".
func (n *Net) setupLinks() error {
	h, err := netlink.NewHandleAt(n.ns)
	if err != nil {
		return fmt.Errorf("opening netlink in namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("finding loopback: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing loopback up: %w", err)
	}
	var dummy netlink.Link = &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: dummyLink}}
	err = h.LinkAdd(dummy)
	if errors.Is(err, unix.EOPNOTSUPP) {
		// A kernel built without CONFIG_DUMMY (Firecracker's guests): a
		// bridge without ports is the same, a link that only holds
		// addresses.
		dummy = &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: dummyLink}}
		err = h.LinkAdd(dummy)
	}
	if err != nil {
		return fmt.Errorf("adding link %s: %w", dummyLink, err)
	}
	if err := h.LinkSetUp(dummy); err != nil {
		return fmt.Errorf("bringing %s up: %w", dummyLink, err)
	}
	for _, a := range linkAddrs() {
		addr := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(a, a.BitLen()))}
		if a.Is6() {
			// Without NODAD the address stays tentative for a second or
			// so, and binding to it fails with EADDRNOTAVAIL.
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := h.AddrAdd(dummy, addr); err != nil {
			return fmt.Errorf("adding %s to %s: %w", a, dummyLink, err)
		}
	}
	return waitLocalRoutes(h, linkAddrs())
}

// localRouteWait bounds the wait for the kernel to finish the IPv6
// addresses: about 100 ms at most measured on 2 busy cores.
const localRouteWait = 10 * time.Second

// waitLocalRoutes waits until every IPv6 address of addrs has its route in
// the local table. The kernel adds an IPv6 address's local route only when
// its address work (DAD, done at once under NODAD) runs on a workqueue,
// after AddrAdd has returned; until then a connection to the address, from
// inside the namespace, follows the address's other route onto the link,
// waits for neighbour discovery that nothing answers and fails after about
// 3 s with "connect: no route to host", though a socket is already bound to
// the address (binding needs the address alone). Under load the work runs
// late: this is how TestHTTP's IPv6 case failed once in make test. IPv4
// addresses get their local routes within AddrAdd.
func waitLocalRoutes(h *netlink.Handle, addrs []netip.Addr) error {
	deadline := time.Now().Add(localRouteWait)
	for _, a := range addrs {
		if !a.Is6() {
			continue
		}
		filter := &netlink.Route{Table: unix.RT_TABLE_LOCAL, Dst: ipNet(netip.PrefixFrom(a, a.BitLen()))}
		for {
			routes, err := nlretry.Dump(func() ([]netlink.Route, error) {
				return h.RouteListFiltered(netlink.FAMILY_V6, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
			})
			if err != nil {
				return fmt.Errorf("listing the local route of %s: %w", a, err)
			}
			if len(routes) > 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("waiting for the local route of %s: none after %v", a, localRouteWait)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}
