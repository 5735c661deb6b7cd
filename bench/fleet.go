//go:build linux

package main

// A session call through another server of a fleet: the forwarding hop.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/miekg/dns"
)

// fleetRow is the name of benchFleet's row.
const fleetRow = "session call through another server of a fleet, every 0.5 s"

// benchFleet times session calls made through a second server of a fleet
// (the first holds the session): the forwarding hop's cost, against the
// session call row. Both servers use one containerd namespace, on
// 127.0.0.1 and 127.0.0.2 with one API port and one fleet port, found by
// a DNS server of the bench's own answering the peers' host name with
// both.
func benchFleet(n int, boxerBin, address string) (row, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return row{}, err
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if len(q.Question) == 1 && q.Question[0].Qtype == dns.TypeA {
			for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.ParseIP(ip)})
			}
		}
		_ = w.WriteMsg(m)
	})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.ActivateAndServe() }()
	defer func() { _ = srv.Shutdown(); wg.Wait() }()

	dir, err := os.MkdirTemp("", "boxer-bench-fleet-")
	if err != nil {
		return row{}, err
	}
	defer os.RemoveAll(dir)
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("the bench fleet's key, 32 bytes or more"), 0o600); err != nil {
		return row{}, err
	}
	// Two free ports, both held until both are known: the API's and the
	// fleet listener's.
	var ports [2]int
	var held []net.Listener
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return row{}, err
		}
		held = append(held, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	for _, ln := range held {
		ln.Close()
	}
	port, fleetPort := ports[0], ports[1]
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		s, err := startServerOn(boxerBin, address, net.JoinHostPort(ip, strconv.Itoa(port)), "--warm-size", "0",
			"--fleet-peers", "peers.fleet.bench", "--fleet-listen", net.JoinHostPort(ip, strconv.Itoa(fleetPort)), "--fleet-dns", pc.LocalAddr().String(), "--fleet-key-file", key, "--fleet-node", fmt.Sprint("bench-node-", i))
		if err != nil {
			return row{}, err
		}
		servers = append(servers, s)
	}
	times, err := sessionCalls(n, servers[0].url, servers[1].url)
	if err != nil {
		return row{}, err
	}
	return row{name: fleetRow, times: times}, nil
}
