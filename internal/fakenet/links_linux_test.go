package fakenet

import (
	"context"
	"testing"
	"time"
)

// TestIPv6AtStart connects to the IPv6 host as soon as Start returns, in
// several fresh namespaces: the kernel's local route for an IPv6 address
// comes after the address, and a connection made before it failed with
// "no route to host" (see waitLocalRoutes).
func TestIPv6AtStart(t *testing.T) {
	for i := range 5 {
		n := start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := n.DialContext(ctx, "tcp", hostPort(V6Addr, HTTPPort))
		cancel()
		if err != nil {
			t.Fatalf("namespace %d: connecting to %s at once: %v", i, V6Addr, err)
		}
		c.Close()
		if err := n.Close(); err != nil {
			t.Fatalf("namespace %d: Close: %v", i, err)
		}
	}
}
