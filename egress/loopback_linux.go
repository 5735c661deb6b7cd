package egress

// A network namespace with loopback only, for a gVisor session's netstack.

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// MakeLoopbackNetns makes a network namespace bound at path holding lo
// alone, up, with no IPv6. gVisor's netstack (--network=sandbox) copies
// the interfaces of the namespace it starts in and skips those that are
// down: in a fresh namespace, whose lo is down, the sandbox would have no
// loopback at all. RemoveNetns removes it (as does the reaper's removal
// of the run directory that holds it).
func MakeLoopbackNetns(path string) (err error) {
	if err := makeNetns(path); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = removeNetns(path)
		}
	}()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("bringing up the sandbox's loopback: %w", err)
	}
	return nil
}

// RemoveNetns unbinds and removes a namespace made by MakeLoopbackNetns.
func RemoveNetns(path string) error { return removeNetns(path) }

// DialIn connects to address (an IP and a port) from inside the network
// namespace at path (a bind mount, or /proc/PID/ns/net): the socket is
// made there, so it reaches what listens there and nothing of the host's.
func DialIn(ctx context.Context, path, network, address string) (net.Conn, error) {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer target.Close()
	return dialIn(ctx, target, &net.Dialer{}, network, address)
}
