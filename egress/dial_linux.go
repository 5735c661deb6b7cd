package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"

	"github.com/vishvananda/netns"
)

// NetnsDialer returns a Dialer whose connections are created inside the
// network namespace bound at path (a file under /run/netns, or
// /proc/PID/ns/net), so that the resolver's and the proxy's upstream
// traffic leaves from the network the operator chose.
func NetnsDialer(path string) (Dialer, error) {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	// The handle lives as long as the Dialer: a namespace bound at path
	// stays open even if it is unmounted meanwhile.
	runtime.AddCleanup(&target, func(h netns.NsHandle) { h.Close() }, target)
	d := &net.Dialer{}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		return dialIn(ctx, target, d, network, address)
	}, nil
}

// dialIn creates a connection inside the namespace target, on a thread
// locked to it for the socket(2) call, as CNI's ns.Do does: the socket
// belongs to the namespace it was created in, whatever thread uses it next.
func dialIn(ctx context.Context, target netns.NsHandle, d *net.Dialer, network, address string) (c net.Conn, retErr error) {
	// A name would be looked up on other goroutines, from the host's
	// namespace: only an address is dialed on this thread alone.
	if _, err := netip.ParseAddrPort(address); err != nil {
		return nil, fmt.Errorf("dialing %s from a network namespace: give an address and a port, not a name", address)
	}
	runtime.LockOSThread()
	origin, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("reading the current network namespace: %w", err)
	}
	defer origin.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering the upstream network namespace: %w", err)
	}
	defer func() {
		if err := netns.Set(origin); err != nil {
			// The thread stays in the wrong namespace: leave it locked, so
			// that it exits with this goroutine instead of serving others.
			if c != nil {
				c.Close()
			}
			c, retErr = nil, fmt.Errorf("leaving the upstream network namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	return d.DialContext(ctx, network, address)
}
