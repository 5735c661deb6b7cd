package integration

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// heldPorts are the abstract unix sockets by which this test process
// claims the ports freePort gave out, for the process's life.
var heldPorts struct {
	sync.Mutex
	claims []net.Listener
}

// freePort returns a loopback TCP port nothing listens on, for a server
// the test starts next. It is taken below the kernel's ephemeral range, so
// no outgoing connection takes it before that server binds it, and it is
// claimed by an abstract unix socket, so neither this process nor another
// test run beside it (a loaded make test) hands it out twice. A port from
// 127.0.0.1:0 could be both: CI once saw an E2B listener's port, closed
// for the server to bind, taken by that server's own API listener.
func freePort(t *testing.T) int {
	t.Helper()
	const low = 10000
	high := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > low+1000 {
				high = n
			}
		}
	}
	heldPorts.Lock()
	defer heldPorts.Unlock()
	start := rand.IntN(high - low)
	for i := range high - low {
		port := low + (start+i)%(high-low)
		claim, err := net.Listen("unix", fmt.Sprintf("@boxer-test-port-%d", port))
		if err != nil {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			claim.Close()
			continue
		}
		ln.Close()
		heldPorts.claims = append(heldPorts.claims, claim)
		return port
	}
	t.Fatalf("no free port in %d-%d", low, high-1)
	return 0
}
