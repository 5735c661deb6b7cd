package egress

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/internal/nlretry"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// inNetns runs fn on a thread in the namespace bound at path.
func inNetns(t *testing.T, path string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			t.Error(err)
			return
		}
		ns, err := netns.GetFromPath(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			t.Error(err)
			return
		}
		fn()
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}

// testOptions are boxer's defaults: leases are the host's, shared with
// any boxer running beside the test.
func testOptions(t *testing.T) Options {
	t.Helper()
	rng, err := ParseRange(DefaultRange)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Dir: LeaseDir, Range: rng}
}

// TestLinkRefusesWhatIsNotForTheGateway attaches a link (with no gateway
// serving yet) and checks, from inside its namespace, that its interfaces
// and routes are as designed, that TCP anywhere is redirected to the
// gateway's proxy port and UDP (other than DNS) is refused promptly, and
// that removing it leaves nothing.
func TestLinkRefusesWhatIsNotForTheGateway(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root: network namespaces and nftables")
	}
	dir := t.TempDir()
	l, err := Attach(testOptions(t), dir, filepath.Join(dir, "netns"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Remove()
	l.Start(Config{MaxBytes: 1 << 20, MaxConns: 4, UpstreamDNS: "127.0.0.1:1"})
	if !strings.HasPrefix(l.Gateway.String(), "10.201.") || l.Addr != l.Gateway.Next() {
		t.Errorf("gateway %s and sandbox %s, want a /30 of %s", l.Gateway, l.Addr, DefaultRange)
	}
	if data, _ := os.ReadFile("/proc/sys/net/ipv6/conf/" + l.lease.hostIf() + "/disable_ipv6"); strings.TrimSpace(string(data)) != "1" {
		t.Errorf("IPv6 on the host end: disable_ipv6=%q", data)
	}
	inNetns(t, l.Netns, func() {
		links, _ := nlretry.Dump(netlink.LinkList)
		var names []string
		for _, k := range links {
			names = append(names, k.Attrs().Name)
			if k.Attrs().Flags&net.FlagUp == 0 {
				t.Errorf("the sandbox's %s is down", k.Attrs().Name)
			}
		}
		if strings.Join(names, ",") != "lo,eth0" {
			t.Errorf("sandbox namespace holds %v, want lo and eth0", names)
		}
		if data, _ := os.ReadFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6"); strings.TrimSpace(string(data)) != "1" {
			t.Errorf("IPv6 on the sandbox's eth0: disable_ipv6=%q", data)
		}
		// TCP to the gateway's port 80 meets the proxy, which refuses
		// the gateway at once. (Only the gateway: a destination off this
		// machine could leave it if the rules were broken.)
		// Its reset may come before connect returns.
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(l.Gateway, 80).String(), 3*time.Second)
		switch {
		case errors.Is(err, syscall.ECONNRESET):
		case err != nil:
			t.Fatalf("TCP to the gateway: %v, want the proxy to accept and reset", err)
		default:
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
				t.Errorf("TCP to the gateway: read %d, %v; want the proxy to close it", n, err)
			}
			c.Close()
		}
		// UDP other than DNS: port unreachable, seen as refused.
		u, err := net.Dial("udp", netip.AddrPortFrom(l.Gateway, 9999).String())
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		_, _ = u.Write([]byte("x"))
		_ = u.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err = u.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP out: %v, want connection refused (ICMP port unreachable)", err)
		}
	})
	if r := l.Report(); r.DeniedTotal != 1 || r.Denied[0].Reason != "boxer's gateway" {
		t.Errorf("report %+v, want the gateway refused", r)
	}
	if _, err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName(l.lease.hostIf()); err == nil {
		t.Errorf("interface %s left behind", l.lease.hostIf())
	}
	ts, err := tables()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ts, l.lease.table()) {
		t.Errorf("table %s left behind", l.lease.table())
	}
	if _, err := os.Stat(l.lease.file()); err == nil {
		t.Errorf("lease %s left behind", l.lease.file())
	}
	if _, err := os.Stat(l.Netns); err == nil {
		t.Errorf("namespace %s left behind", l.Netns)
	}
}

// TestIfName names interfaces by index as the kernel does, and says
// ENODEV for an index no interface has.
func TestIfName(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if name, err := ifName(lo.Index); err != nil || name != "lo" {
		t.Errorf("ifName(%d) = %q, %v; want lo", lo.Index, name, err)
	}
	if name, err := ifName(1 << 30); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("ifName(1<<30) = %q, %v; want ENODEV", name, err)
	}
}

// TestSweepRemovesLinksOfGoneRuns: a link whose run directory is gone (its
// boxer was killed, the reaper removed the directory) is swept: table,
// interface and lease; a live one is kept.
func TestSweepRemovesLinksOfGoneRuns(t *testing.T) {
	dir := t.TempDir()
	gone, live := filepath.Join(dir, "gone"), filepath.Join(dir, "live")
	var links []*Link
	for _, run := range []string{gone, live} {
		if err := os.Mkdir(run, 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := Attach(testOptions(t), run, filepath.Join(run, "netns"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Remove()
		links = append(links, l)
	}
	if err := removeNetns(links[0].Netns); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := Sweep(LeaseDir); err != nil {
		t.Fatal(err)
	}
	ts, err := tables()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range links {
		_, ifErr := netlink.LinkByName(l.lease.hostIf())
		_, leaseErr := os.Stat(l.lease.file())
		kept := []bool{ifErr == nil, leaseErr == nil, slices.Contains(ts, l.lease.table())}
		for j, what := range []string{"interface", "lease", "table"} {
			if want := i == 1; kept[j] != want {
				t.Errorf("link of the %s run: %s kept=%v, want %v", []string{"gone", "live"}[i], what, kept[j], want)
			}
		}
	}
}
