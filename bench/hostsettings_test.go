//go:build linux

package main

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// TestCheckHostNamesChanges changes forwarding and the nftables ruleset in
// a network namespace of the test's own (both are per namespace), and
// expects checkHost to name each change; the host's own are never touched.
func TestCheckHostNamesChanges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: it makes a network namespace")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread stays in its namespace and ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		before := readHostSettings()
		if before["/proc/sys/net/ipv4/ip_forward"] != "0" || before["nftables"] != "" {
			t.Errorf("a fresh namespace reads %q", before)
			return
		}
		if err := checkHost(before, "unchanged"); err != nil {
			t.Errorf("nothing changed, yet: %v", err)
		}
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			t.Errorf("turning forwarding on in the test's namespace: %v", err)
			return
		}
		c, err := nftables.New()
		if err != nil {
			t.Error(err)
			return
		}
		tb := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "bench_test"})
		c.AddChain(&nftables.Chain{Name: "fwd", Table: tb})
		if err := c.Flush(); err != nil {
			t.Errorf("adding a table: %v", err)
			return
		}
		err = checkHost(before, "at the end")
		if err == nil {
			t.Error("forwarding and a table were added, yet checkHost saw no change")
			return
		}
		for _, want := range []string{"ip_forward: 0 before, 1 now", "+ table 1 bench_test", "+ chain 1 bench_test fwd", "seen at the end"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("checkHost's error lacks %q:\n%v", want, err)
			}
		}
	}()
	<-done
}
