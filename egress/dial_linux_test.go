package egress

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// newNetns creates a network namespace with loopback up, bound at a file
// under t.TempDir(), and a listener on 127.0.0.1 inside it. It skips the
// test where namespaces cannot be made (not root, no CAP_SYS_ADMIN).
func newNetns(t *testing.T) (path string, ln net.Listener) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "netns")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	lnc := make(chan net.Listener, 1)
	// On a thread of its own, which is thrown away (never unlocked) if it
	// cannot go back to the test's namespace.
	go func() {
		runtime.LockOSThread()
		origin, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer origin.Close()
		ns, err := netns.New()
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		l, err := setUpNetns(ns, path)
		if serr := netns.Set(origin); serr != nil {
			errc <- serr
			return
		}
		runtime.UnlockOSThread()
		lnc <- l
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Skipf("cannot make a network namespace here: %v", err)
	}
	ln = <-lnc
	t.Cleanup(func() {
		ln.Close()
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", path, err)
		}
	})
	return path, ln
}

// setUpNetns, on a thread inside ns, binds it at path, brings loopback up
// and listens on 127.0.0.1.
func setUpNetns(ns netns.NsHandle, path string) (net.Listener, error) {
	self := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/ns/net"
	if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(ns)
	if err == nil {
		defer h.Close()
		var lo netlink.Link
		if lo, err = h.LinkByName("lo"); err == nil {
			err = h.LinkSetUp(lo)
		}
	}
	if err != nil {
		unix.Unmount(path, unix.MNT_DETACH)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		unix.Unmount(path, unix.MNT_DETACH)
	}
	return ln, err
}

// serveOnce answers the first connection to ln with greeting.
func serveOnce(ln net.Listener, greeting string) {
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, greeting)
	}()
}

func TestNetnsDialer(t *testing.T) {
	path, inside := newNetns(t)
	port := inside.Addr().(*net.TCPAddr).Port
	// The same port on the host's loopback must not be what the dialer
	// reaches.
	host, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Skipf("port %d is taken on the host: %v", port, err)
	}
	defer host.Close()
	serveOnce(inside, "inside")
	serveOnce(host, "host")

	dial, err := NetnsDialer(path)
	if err != nil {
		t.Fatalf("NetnsDialer: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", inside.Addr().String())
	if err != nil {
		t.Fatalf("dialing %s in the namespace: %v", inside.Addr(), err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "inside" {
		t.Errorf("read %q, %v, want the namespace's listener to answer inside", got, err)
	}
	if _, err := dial(ctx, "tcp", "localhost:"+strconv.Itoa(port)); err == nil {
		t.Error("dialing a name from the namespace worked, want it refused")
	}
	// The test's own thread is still in the host's namespace.
	hc, err := net.DialTimeout("tcp", host.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dialing the host's listener: %v", err)
	}
	defer hc.Close()
	hc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, _ := io.ReadAll(hc); string(got) != "host" {
		t.Errorf("host listener answered %q, want host", got)
	}
}

func TestNetnsDialerMissing(t *testing.T) {
	if _, err := NetnsDialer(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("NetnsDialer of a missing path worked, want an error")
	}
}
