package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/internal/nlretry"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// mtu is both ends' (they must agree).
const mtu = 1500

// LeaseDir holds the address leases of every boxer on the host.
const LeaseDir = "/run/boxer/net"

// Options are the operator's settings of the egress path.
type Options struct {
	// Dir holds the address leases (one file per sandbox with network):
	// LeaseDir unless a test says otherwise.
	Dir string
	// Range is the IPv4 range the links are addressed from.
	Range netip.Prefix
}

// ParseRange parses an egress range: an IPv4 CIDR of /8 to /28.
func ParseRange(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Bits() < 8 || p.Bits() > 30-leaseBits {
		return netip.Prefix{}, fmt.Errorf("egress range %q must be an IPv4 CIDR from /8 to /28, like %s", s, DefaultRange)
	}
	return p.Masked(), nil
}

// Link is one sandbox's way out: its network namespace (holding lo and
// eth0), the veth pair to the host, the nftables table on the host end,
// and the gateway (proxy and resolver) listening there.
type Link struct {
	// Netns is the namespace's bind mount, for the sandbox's spec.
	Netns string
	// Gateway is the host end's address; Addr the sandbox's.
	Gateway, Addr netip.Addr
	lease         lease
	// hostIndex is the host end's interface index, once made.
	hostIndex int
	gw        *Gateway
	removed   bool
	report    Report
}

// Attach makes the link of the sandbox whose run directory is runDir
// (the lease names it: Sweep removes a link whose run directory is gone),
// its namespace bound at nsPath. Nothing passes until Start; on error,
// whatever was made is removed.
func Attach(o Options, runDir, nsPath string) (l *Link, err error) {
	// One netlink socket serves every request to the host's namespace.
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening netlink: %w", err)
	}
	defer h.Close()
	if err := checkRange(h, o.Range); err != nil {
		return nil, err
	}
	ls, err := takeLease(o.Dir, o.Range, runDir)
	if err != nil {
		return nil, err
	}
	l = &Link{Netns: nsPath, lease: ls}
	l.Gateway, l.Addr = leaseAddrs(o.Range, ls.n)
	defer func() {
		if err != nil {
			_, rerr := l.Remove()
			err = errors.Join(err, rerr)
		}
	}()
	if err := makeNetns(nsPath); err != nil {
		return l, err
	}
	if err := l.wire(h); err != nil {
		return l, err
	}
	if l.gw, err = Listen(l.Gateway); err != nil {
		return l, err
	}
	r := rules{table: ls.table(), hostIf: ls.hostIf(), gateway: l.Gateway, proxy: l.gw.ProxyPort(), dns: l.gw.DNSPort()}
	return l, r.install()
}

// Start lets the sandbox's traffic through the gateway under cfg.
func (l *Link) Start(cfg Config) { l.gw.Start(cfg) }

// Report is what the sandbox's network did so far.
func (l *Link) Report() Report {
	if l.removed {
		return l.report
	}
	return l.gw.Report()
}

// Env is what the sandbox's programs need to use the proxy explicitly
// (the clients that read them; the others are proxied transparently).
func (l *Link) Env() []string {
	proxy := "http://" + netip.AddrPortFrom(l.Gateway, l.gw.ProxyPort()).String()
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env = append(env, k+"="+proxy)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
}

// ResolvConf is the sandbox's /etc/resolv.conf: the gateway's resolver.
func (l *Link) ResolvConf() []byte {
	return []byte("# Written by boxer: names resolve through boxer's resolver, allowed names only.\nnameserver " + l.Gateway.String() + "\noptions timeout:2 attempts:2\n")
}

// Remove takes the link down: gateway, interfaces, table, namespace and
// lease. The interfaces go before the table that guards them, so whatever
// the sandbox may still send (Remove may come before its processes are
// gone) finds either rules or no way out. It returns the final report and
// is idempotent.
func (l *Link) Remove() (Report, error) {
	if l.removed {
		return l.report, nil
	}
	l.removed = true
	if l.gw != nil {
		l.report = l.gw.Close()
	}
	err := l.removeHostEnd()
	if err == nil {
		// A table whose interface is still there stays: Sweep retries.
		err = removeTable(l.lease.table())
	}
	err = errors.Join(err, removeNetns(l.Netns))
	if err == nil {
		err = l.lease.release()
	}
	return l.report, err
}

// wire makes the veth pair with h, a handle in the host's namespace: the
// host end, addressed as the gateway, with IPv6 off; the sandbox end, eth0
// in the namespace, with the sandbox's address and its default route
// through the gateway.
func (l *Link) wire(h *netlink.Handle) error {
	ns, err := netns.GetFromPath(l.Netns)
	if err != nil {
		return fmt.Errorf("opening network namespace: %w", err)
	}
	defer ns.Close()
	hostIf := l.lease.hostIf()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostIf, MTU: mtu}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating interface %s: %w", hostIf, err)
	}
	// LinkAdd looked the new interface up: its index is set.
	if l.hostIndex = veth.Index; l.hostIndex == 0 {
		return fmt.Errorf("finding interface %s", hostIf)
	}
	// Per interface: the host's own settings stay as they are.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+hostIf+"/disable_ipv6", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("disabling IPv6 on %s: %w", hostIf, err)
	}
	if err := h.AddrAdd(veth, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(l.Gateway, 32-leaseBits))}); err != nil {
		return fmt.Errorf("addressing %s: %w", hostIf, err)
	}
	if err := h.LinkSetUp(veth); err != nil {
		return fmt.Errorf("bringing %s up: %w", hostIf, err)
	}
	nh, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("entering network namespace: %w", err)
	}
	defer nh.Close()
	// A new namespace's loopback is always its first interface.
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: 1}}
	if err := nh.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing the sandbox's lo up: %w", err)
	}
	eth0, err := nh.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("finding the sandbox's eth0: %w", err)
	}
	if err := nh.AddrAdd(eth0, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(l.Addr, 32-leaseBits))}); err != nil {
		return fmt.Errorf("addressing the sandbox's eth0: %w", err)
	}
	if err := nh.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("bringing the sandbox's eth0 up: %w", err)
	}
	if err := nh.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: l.Gateway.AsSlice()}); err != nil {
		return fmt.Errorf("routing the sandbox through its gateway: %w", err)
	}
	return nil
}

// makeNetns creates a network namespace and binds it at path. Inside it,
// IPv6 is off before any interface exists (the sandbox's eth0 inherits
// it): the sandbox has no IPv6 at all, so none can slip past the IPv4
// rules.
func makeNetns(path string) (err error) {
	if ns, err := netns.GetFromPath(path); err == nil {
		// Made by the caller, in the sandbox's user namespace (whose
		// runtime could not mount a fresh sysfs in a network namespace
		// of the host's): IPv6 off in it.
		defer ns.Close()
		return runInNetns(ns, disableIPv6)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("creating network namespace file: %w", err)
	}
	f.Close()
	return onNetnsThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("creating network namespace: %w", err)
		}
		return nil
	}, func() error { return insideNetns(path) })
}

// insideNetns runs on a thread in the new namespace: IPv6 off, then the
// bind mount that keeps the namespace alive.
func insideNetns(path string) error {
	if err := disableIPv6(); err != nil {
		return err
	}
	src := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/ns/net"
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding network namespace: %w", err)
	}
	return nil
}

// disableIPv6 turns IPv6 off in the calling thread's network namespace.
func disableIPv6() error {
	for _, k := range []string{"all", "default"} {
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0o644); err != nil {
			return fmt.Errorf("disabling IPv6 in the sandbox's namespace: %w", err)
		}
	}
	return nil
}

// runInNetns runs fn on a thread in ns.
func runInNetns(ns netns.NsHandle, fn func() error) error {
	return onNetnsThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("entering the sandbox's network namespace: %w", err)
		}
		return nil
	}, fn)
}

// onNetnsThread runs fn on a locked thread that enter has moved into
// another network namespace, then moves the thread back. A thread that
// cannot go back to the host's namespace is never unlocked: it ends with
// its goroutine.
func onNetnsThread(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("reading the current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := enter(); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = fn()
		if serr := netns.Set(orig); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("returning to the host's network namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// removeNetns unbinds and removes a namespace made by makeNetns. Once no
// process is in it either, the kernel frees it with its interfaces.
func removeNetns(path string) error {
	if path == "" {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting network namespace: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing network namespace file: %w", err)
	}
	return nil
}

// removeHostEnd deletes the link's host end (and with it its peer): by
// the index it was made with while that index still names it, else by
// name.
func (l *Link) removeHostEnd() error {
	if l.hostIndex == 0 {
		return removeLink(l.lease.hostIf())
	}
	name, err := ifName(l.hostIndex)
	if errors.Is(err, unix.ENODEV) {
		return nil
	}
	if err != nil || name != l.lease.hostIf() {
		return removeLink(l.lease.hostIf())
	}
	if err := netlink.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: name, Index: l.hostIndex}}); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("removing interface %s: %w", name, err)
	}
	return nil
}

// removeLink deletes a host end (and with it its peer); one already gone
// is not an error.
func removeLink(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("finding interface %s: %w", name, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("removing interface %s: %w", name, err)
	}
	return nil
}

// ifName is the name of the host's interface of that index (the kernel's
// if_indextoname: one ioctl, where a netlink lookup decodes the whole
// interface); ENODEV when there is none.
func ifName(index int) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return ifNameOn(fd, index)
}

func ifNameOn(fd, index int) (string, error) {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return "", err
	}
	ifr.SetUint32(uint32(index))
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFNAME, ifr); err != nil {
		return "", err
	}
	return ifr.Name(), nil
}

// checkRange refuses a range that clashes with a route or an address of
// the host's (other than boxer's own links), listing routes with h.
func checkRange(h *netlink.Handle, rng netip.Prefix) error {
	if !rng.IsValid() {
		return errors.New("no egress range set")
	}
	routes, err := nlretry.Dump(func() ([]netlink.Route, error) { return h.RouteList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return fmt.Errorf("listing the host's routes: %w", err)
	}
	fd := -1
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	for _, rt := range routes {
		if rt.Dst == nil {
			continue
		}
		p, ok := netipPrefix(rt.Dst)
		if !ok || p.Bits() == 0 || !p.Overlaps(rng) {
			continue
		}
		if fd < 0 {
			if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
				return fmt.Errorf("naming the host's interfaces: %w", err)
			}
		}
		name, err := ifNameOn(fd, rt.LinkIndex)
		if err != nil {
			// Its interface is gone (a sandbox's link being removed
			// meanwhile): so is the route.
			continue
		}
		if strings.HasPrefix(name, hostIfPrefix) {
			continue
		}
		return fmt.Errorf("egress range %s overlaps the host's route to %s (dev %s): choose a free range with --net-range", rng, p, name)
	}
	return nil
}

// Sweep removes what sandboxes whose run directory is gone left of their
// links: tables, host ends and leases; also tables and host ends of
// boxer's with no lease at all. The namespaces' bind mounts live in run
// directories, whose removal unmounts them.
func Sweep(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return withLock(dir, func() error {
		held, err := leases(dir)
		if err != nil {
			return err
		}
		var errs []error
		for n, holder := range held {
			if _, err := os.Stat(holder); err == nil || !filepath.IsAbs(holder) {
				continue
			}
			errs = append(errs, removeLease(lease{dir: dir, n: n}))
		}
		links, err := nlretry.Dump(netlink.LinkList)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing interfaces: %w", err))
		}
		for _, link := range links {
			name := link.Attrs().Name
			if n, err := strconv.Atoi(strings.TrimPrefix(name, hostIfPrefix)); strings.HasPrefix(name, hostIfPrefix) && (err != nil || held[n] == "") {
				errs = append(errs, removeLink(name))
			}
		}
		ts, err := tables()
		errs = append(errs, err)
		for _, t := range ts {
			if n, err := strconv.Atoi(strings.TrimPrefix(t, tablePrefix)); err != nil || held[n] == "" {
				errs = append(errs, removeTable(t))
			}
		}
		return errors.Join(errs...)
	})
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func netipPrefix(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}
