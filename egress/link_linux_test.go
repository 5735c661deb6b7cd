package egress

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

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

func testRange(t *testing.T) netip.Prefix {
	t.Helper()
	rng, err := ParseRange("10.201.128.0/24")
	if err != nil {
		t.Fatal(err)
	}
	return rng
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
	before := hostState(t)
	l, err := Attach(Options{Dir: filepath.Join(dir, "leases"), Range: testRange(t)}, "bx-test", filepath.Join(dir, "netns"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Remove()
	if got := l.Gateway.String(); got != "10.201.128.1" {
		t.Errorf("gateway %s, want the range's first", got)
	}
	inNetns(t, l.Netns, func() {
		links, _ := netlink.LinkList()
		var names []string
		for _, k := range links {
			names = append(names, k.Attrs().Name)
		}
		if strings.Join(names, ",") != "lo,eth0" {
			t.Errorf("sandbox namespace holds %v, want lo and eth0", names)
		}
		if data, _ := os.ReadFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6"); strings.TrimSpace(string(data)) != "1" {
			t.Errorf("IPv6 on the sandbox's eth0: disable_ipv6=%q", data)
		}
		// TCP to anywhere meets the (empty) proxy port: a reset at once.
		start := time.Now()
		_, err := net.DialTimeout("tcp", "192.0.2.1:80", 3*time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > time.Second {
			t.Errorf("TCP out: %v after %s, want a prompt connection refused", err, time.Since(start))
		}
		// UDP other than DNS: port unreachable, seen as refused.
		c, err := net.Dial("udp", "192.0.2.1:9999")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte("x"))
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP out: %v, want connection refused (ICMP port unreachable)", err)
		}
	})
	if _, err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if after := hostState(t); after != before {
		t.Errorf("left behind:\nbefore %s\nafter  %s", before, after)
	}
}

// hostState is what a link adds on the host: interfaces, boxer's tables.
func hostState(t *testing.T) string {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range links {
		out = append(out, k.Attrs().Name)
	}
	ts, err := tables()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(append(out, ts...), " ")
}
