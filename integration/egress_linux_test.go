package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/boxer-dev/boxer/egress"
	"github.com/boxer-dev/boxer/internal/fakenet"
	"github.com/boxer-dev/boxer/internal/nlretry"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The fake internet every egress test talks to, started once: boxer's
// upstream side (resolver and connections) is pointed into its namespace
// by the operator settings, so that even a broken policy reaches nothing
// beyond the test's own hosts.
var (
	netOnce sync.Once
	fakeNet *fakenet.Net
	netErr  error
	netDir  string
)

// internet returns the fake internet, starting it on first use.
func internet(t *testing.T) *fakenet.Net {
	t.Helper()
	netOnce.Do(func() {
		netDir, netErr = os.MkdirTemp("", "boxer-fakenet-")
		if netErr == nil {
			fakeNet, netErr = fakenet.Start(netDir)
		}
		if netErr == nil {
			netErr = addGuardRoutes()
		}
	})
	if netErr != nil {
		t.Fatalf("starting the fake internet: %v", netErr)
	}
	return fakeNet
}

// guardRoutes are the blackhole routes this test run added to the host's
// main table, removed again by stopInternet.
var guardRoutes []*netlink.Route

// addGuardRoutes is a guard for the tests' own sake: should a sandbox's
// rules ever fail, the host drops what is meant for the fake internet's
// hosts instead of forwarding it out (ip_forward may be 1). It blackholes
// their addresses alone, each a /32 or /128, not their whole range: the
// range is a real one on some hosts (this one resolves deb.debian.org
// into it), and other work beside the tests must still reach it. Only
// the documentation ranges' addresses: the loopback, private and
// metadata addresses stand for ones the host itself may need, and the
// proxy refuses them by itself. A route that exists already is another
// test run's: it stays, and is not removed with this run's.
func addGuardRoutes() error {
	for _, a := range fakenet.Addrs() {
		if !docRange4.Contains(a) && !docRange6.Contains(a) {
			continue
		}
		r := &netlink.Route{Dst: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}, Type: unix.RTN_BLACKHOLE}
		err := netlink.RouteAdd(r)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("adding a blackhole route to %s: %w", a, err)
		}
		guardRoutes = append(guardRoutes, r)
	}
	return nil
}

// The documentation ranges the fake internet's public hosts are in.
var (
	docRange4 = netip.MustParsePrefix("203.0.113.0/24")
	docRange6 = netip.MustParsePrefix("2001:db8::/32")
)

// stopInternet stops the fake internet, if it was started (TestMain).
func stopInternet() {
	for _, r := range guardRoutes {
		_ = netlink.RouteDel(r)
	}
	guardRoutes = nil
	if fakeNet != nil {
		_ = fakeNet.Close()
	}
	if netDir != "" {
		_ = os.RemoveAll(netDir)
	}
}

// egressEnv is boxer's operator settings for the fake internet.
func egressEnv(n *fakenet.Net) []string {
	return []string{"BOXER_EGRESS_NETNS=" + n.Netns, "BOXER_DNS_UPSTREAM=" + n.DNS}
}

// caDir is a directory holding the fake internet's CA as ca.pem, for
// --copy-in: the sandbox trusts it through the usual variables.
func caDir(t *testing.T, n *fakenet.Net) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ca.pem"), n.CAPEM, 0o644))
	must(t, os.Chmod(dir, 0o755))
	for _, kv := range n.TrustEnv("/workspace/ca.pem") {
		env = append(env, "--env", kv)
	}
	return dir, env
}

// netRun runs 'boxer run --json' against the fake internet.
func netRun(t *testing.T, n *fakenet.Net, args ...string) (result, run) {
	t.Helper()
	r := boxer(t, egressEnv(n), append([]string{"run", "--json"}, args...)...)
	var res result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("boxer run --json %v: bad JSON (%v): stdout %q stderr %q", args, err, r.stdout, r.stderr)
	}
	return res, r
}

// clientsProgram reaches web.test in the three ways a program does: an
// HTTP library that reads HTTPS_PROXY, a raw socket with TLS that ignores
// it, and a non-HTTP protocol (the echo) on an allowed port.
const clientsProgram = `
import os, socket, ssl, urllib.request
ctx = ssl.create_default_context(cafile="/workspace/ca.pem")
body = urllib.request.urlopen("https://web.test/proxied", context=ctx, timeout=10).read().decode()
print("proxy:", body.strip())
s = ctx.wrap_socket(socket.create_connection(("web.test", 443), timeout=10), server_hostname="web.test")
s.sendall(b"GET /raw HTTP/1.0\r\nHost: web.test\r\n\r\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print("raw:", data.split(b"\r\n\r\n", 1)[1].decode().strip())
e = socket.create_connection(("web.test", 7000), timeout=10)
e.sendall(b"ping")
got = b""
while len(got) < 4:
    got += e.recv(4 - len(got))
print("echo:", got.decode())
`

// TestEgressAllowedClients: an allowed name works through the proxy
// variables and without them, over TLS and plain TCP, on both runtimes;
// the result's network object counts it.
func TestEgressAllowedClients(t *testing.T) {
	n := internet(t)
	dir, env := caDir(t, n)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			args := append([]string{"--runtime", rt, "--lang", "python", "--allow-host", "web.test:443,7000", "--copy-in", dir}, env...)
			res, r := netRun(t, n, append(args, "-c", clientsProgram)...)
			want := "proxy: hello from web.test on 203.0.113.10:443\nraw: hello from web.test on 203.0.113.10:443\necho: ping\n"
			if res.ExitCode != 0 || res.Stdout != want {
				t.Fatalf("exit %d, stdout %q, want %q; stderr %s %s", res.ExitCode, res.Stdout, want, res.Stderr, r.stderr)
			}
			nr := res.Network
			if nr == nil || nr.Connections < 3 || nr.BytesIn == 0 || nr.BytesOut == 0 || len(nr.Denied) != 0 {
				t.Errorf("network report %+v, want 3 connections, bytes both ways, nothing denied", nr)
			}
			if nr != nil && !slices.Equal(nr.Allowed, []string{"web.test:443,7000"}) {
				t.Errorf("allowed %v, want the list as given", nr.Allowed)
			}
		})
	}
	assertClean(t)
}

// TestEgressNodeFetchAndCurl: node's fetch ignores the proxy variables
// (transparent path); curl honours them.
func TestEgressNodeFetchAndCurl(t *testing.T) {
	n := internet(t)
	dir, env := caDir(t, n)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			base := append([]string{"--runtime", rt, "--allow-host", "web.test", "--copy-in", dir}, env...)
			res, r := netRun(t, n, append(base, "--lang", "javascript", "-c",
				`fetch("https://web.test/fetch").then(r => r.text()).then(t => console.log(t.trim())).catch(e => { console.log("error", e.cause || e); process.exit(1) })`)...)
			if res.Stdout != "hello from web.test on 203.0.113.10:443\n" {
				t.Errorf("node fetch: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			res, r = netRun(t, n, append(base, "--lang", "bash", "-c", `curl -sS --max-time 10 https://web.test/curl`)...)
			if res.Stdout != "hello from web.test on 203.0.113.10:443\n" {
				t.Errorf("curl: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
		})
	}
	assertClean(t)
}

// TestEgressPackageInstall: pip and npm install a package from an index on
// the fake internet, and the same run imports it (the root stays
// read-only: packages land in a writable place the interpreter searches).
func TestEgressPackageInstall(t *testing.T) {
	n := internet(t)
	dir, env := caDir(t, n)
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			base := append([]string{"--runtime", rt, "--copy-in", dir, "--timeout", "120s"}, env...)
			res, r := netRun(t, n, append(base, "--allow-host", "pypi.test", "--lang", "python", "-c", `
import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--index-url", "https://pypi.test/simple", "boxertest"], capture_output=True, text=True)
if p.returncode != 0:
    print("pip failed", p.stdout, p.stderr); sys.exit(1)
import boxertest
print("imported", boxertest.VALUE)
`)...)
			if res.Stdout != "imported 42\n" {
				t.Errorf("pip install: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			res, r = netRun(t, n, append(base, "--allow-host", "npm.test", "--lang", "javascript", "-c", `
const { execFileSync } = require("child_process");
execFileSync("npm", ["install", "--no-save", "--registry", "https://npm.test/", "boxer-test-pkg"], { stdio: "inherit" });
console.log("required", require("/workspace/node_modules/boxer-test-pkg"));
`)...)
			if !strings.HasSuffix(res.Stdout, "required 42\n") {
				t.Errorf("npm install: %q %q %s", res.Stdout, res.Stderr, r.stderr)
			}
		})
	}
	assertClean(t)
}

// TestEgressDNSNeverForwardsOtherNames: queries for names off the list,
// however many and however random, get NXDOMAIN from boxer's resolver and
// never reach the upstream (no tunnel out through DNS); the result lists
// them as denied.
func TestEgressDNSNeverForwardsOtherNames(t *testing.T) {
	n := internet(t)
	before := n.Queries("other.test")
	for _, rt := range runtimes {
		res, r := netRun(t, n, "--runtime", rt, "--allow-host", "web.test", "--lang", "python", "-c", `
import socket, secrets
failed = 0
for i in range(20):
    try:
        socket.getaddrinfo(secrets.token_hex(8) + ".other.test", 443)
    except socket.gaierror:
        failed += 1
print("failed", failed)
`)
		if res.Stdout != "failed 20\n" {
			t.Errorf("%s: %q %q %s", rt, res.Stdout, res.Stderr, r.stderr)
		}
		if res.Network == nil || res.Network.DeniedTotal < 20 || !strings.Contains(res.Network.Denied[0].Reason, "not allowed") {
			t.Errorf("%s: network report %+v, want 20 names denied", rt, res.Network)
		}
	}
	if got := n.Queries("other.test"); got != before {
		t.Errorf("the upstream saw %d queries for other.test, want none", got-before)
	}
	assertClean(t)
}

// TestEgressRefusedDestinationsNeverReached: what the hostile programs are
// refused never arrives at the fake internet's hosts either.
func TestEgressRefusedDestinationsNeverReached(t *testing.T) {
	n := internet(t)
	targets := []string{"203.0.113.11:443", "203.0.113.10:80", "127.0.0.1:7000", "10.0.0.5:7000", "169.254.169.254:80"}
	before := map[string]int{}
	for _, a := range targets {
		before[a] = n.Hits(a)
	}
	for _, rt := range runtimes {
		res, r := netRun(t, n, "--runtime", rt, "--allow-host", "web.test", "--allow-host", "loop.test:7000", "--allow-host", "private.test:7000", "--allow-host", "meta.test:80", "--lang", "python", "-c", `
import socket
for host, port in [("203.0.113.11", 443), ("web.test", 80), ("loop.test", 7000), ("private.test", 7000), ("meta.test", 80), ("169.254.169.254", 80), ("10.0.0.5", 7000)]:
    try:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"x")
        got = s.recv(10)
        print(host, port, "got", got)
    except OSError as e:
        print(host, port, "refused", type(e).__name__)
`)
		if strings.Contains(res.Stdout, " got b'x") || strings.Contains(res.Stdout, "hello") {
			t.Errorf("%s: a refused destination answered:\n%s", rt, res.Stdout)
		}
		if res.Network == nil || res.Network.DeniedTotal == 0 {
			t.Errorf("%s: no denials in %+v (stdout %q, stderr %s)", rt, res.Network, res.Stdout, r.stderr)
		}
	}
	for _, a := range targets {
		if got := n.Hits(a); got != before[a] {
			t.Errorf("%s was reached %d times", a, got-before[a])
		}
	}
	assertClean(t)
}

// TestEgressServerNames: a CONNECT tunnel to an allowed name (cdn.test)
// speaks to that name alone: TLS naming another site of its shared
// address (evil.test) is cut, as curl sends it with --connect-to, which
// is how this was found; TLS without a server name reaches an address
// that only a name allows only when the operator passes --allow-no-sni,
// or through an address entry. Every refusal is in network.denied, and
// evil.test's site never answers.
func TestEgressServerNames(t *testing.T) {
	n := internet(t)
	evil := n.Served(fakenet.EvilName)
	// TLS without SNI to $TARGET:443, asking for cdn.test's site.
	const noSNI = `
import os, socket, ssl
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
try:
    s = ctx.wrap_socket(socket.create_connection((os.environ["TARGET"], 443), timeout=10))
    s.sendall(b"GET / HTTP/1.1\r\nHost: cdn.test\r\nConnection: close\r\n\r\n")
    print(s.makefile("rb").read().split(b"\r\n\r\n", 1)[1].decode().strip())
except OSError as e:
    print("refused")
`
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			res, r := netRun(t, n, "--runtime", rt, "--allow-host", fakenet.CDNName, "--lang", "bash", "-c",
				`curl -sSk --max-time 10 https://cdn.test/; curl -sk --max-time 10 --proxytunnel --connect-to evil.test:443:cdn.test:443 https://evil.test/ || echo refused`)
			if want := "site cdn.test on 203.0.113.15:443\nrefused\n"; res.Stdout != want {
				t.Errorf("curl: stdout %q, want %q; stderr %q %s", res.Stdout, want, res.Stderr, r.stderr)
			}
			wantDenied(t, res, "evil.test:443", "TLS server name evil.test is not the CONNECT target cdn.test")

			res, r = netRun(t, n, "--runtime", rt, "--allow-host", fakenet.CDNName, "--env", "TARGET=cdn.test", "--lang", "python", "-c", noSNI)
			if res.Stdout != "refused\n" {
				t.Errorf("no SNI: stdout %q, want refused; stderr %q %s", res.Stdout, res.Stderr, r.stderr)
			}
			wantDenied(t, res, "203.0.113.15:443", "TLS ClientHello without a server name (SNI)")

			for _, c := range []struct {
				what string
				args []string
			}{
				{"an address entry", []string{"run", "--json", "--allow-host", fakenet.CDNAddr, "--runtime", rt, "--env", "TARGET=" + fakenet.CDNAddr, "--lang", "python", "-c", noSNI}},
				{"--allow-no-sni", []string{"--allow-no-sni", "run", "--json", "--allow-host", fakenet.CDNName, "--runtime", rt, "--env", "TARGET=cdn.test", "--lang", "python", "-c", noSNI}},
			} {
				r := boxer(t, egressEnv(n), c.args...)
				var res result
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("%s: bad JSON (%v): %q %q", c.what, err, r.stdout, r.stderr)
				}
				if want := "site cdn.test on 203.0.113.15:443\n"; res.Stdout != want || res.Network == nil || len(res.Network.Denied) != 0 {
					t.Errorf("no SNI with %s: stdout %q, want %q, nothing denied; network %+v; stderr %q", c.what, res.Stdout, want, res.Network, res.Stderr)
				}
			}
		})
	}
	if got := n.Served(fakenet.EvilName); got != evil {
		t.Errorf("evil.test's site answered %d times, want never", got-evil)
	}
	assertClean(t)
}

// TestEgressHTTPHost: plain HTTP to an address that only a name entry
// allows (cdn.test's, a shared host) must name an allowed site as Host in
// every request, without the proxy as through it: HTTP/1.0 without a
// Host, or an address as Host, would reach the default site (evil.test).
// It is refused and recorded unless the operator passes --allow-no-sni;
// an address entry needs no Host.
func TestEgressHTTPHost(t *testing.T) {
	n := internet(t)
	// GET / on its own connection to $TARGET:80 for each Host (None: HTTP/1.0
	// without one); the site that answered, or "refused".
	const program = `
import os, socket
def ask(host):
    s = socket.create_connection((os.environ["TARGET"], 80), timeout=10)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n" if host is None else b"GET / HTTP/1.0\r\nHost: %s\r\n\r\n" % host.encode())
    try:
        data = s.makefile("rb").read()
    except OSError:
        return "refused"
    return data.split(b"\r\n\r\n", 1)[1].decode().split(" on ")[0] if data else "refused"
print(ask("cdn.test"), ask(None), ask("203.0.113.15"), sep=", ")
`
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			evil := n.Served(fakenet.EvilName)
			res, r := netRun(t, n, "--runtime", rt, "--allow-host", fakenet.CDNName+":80", "--env", "TARGET=cdn.test", "--lang", "python", "-c", program)
			if want := "site cdn.test, refused, refused\n"; res.Stdout != want {
				t.Errorf("stdout %q, want %q; stderr %q %s", res.Stdout, want, res.Stderr, r.stderr)
			}
			wantDenied(t, res, "203.0.113.15:80", "HTTP request without a Host")
			wantDenied(t, res, "203.0.113.15:80", "HTTP Host 203.0.113.15 is an address, not an allowed name")
			if got := n.Served(fakenet.EvilName); got != evil {
				t.Errorf("evil.test's site answered %d times, want never", got-evil)
			}
			// The operator's leave, or an address entry, lets the default
			// site answer.
			for _, c := range []struct {
				what string
				args []string
			}{
				{"--allow-no-sni", []string{"--allow-no-sni", "run", "--json", "--allow-host", fakenet.CDNName + ":80", "--runtime", rt, "--env", "TARGET=cdn.test", "--lang", "python", "-c", program}},
				{"an address entry", []string{"run", "--json", "--allow-host", fakenet.CDNAddr + ":80", "--runtime", rt, "--env", "TARGET=" + fakenet.CDNAddr, "--lang", "python", "-c", program}},
			} {
				r := boxer(t, egressEnv(n), c.args...)
				var res result
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("%s: bad JSON (%v): %q %q", c.what, err, r.stdout, r.stderr)
				}
				if want := "site cdn.test, site evil.test, site evil.test\n"; res.Stdout != want || res.Network == nil || len(res.Network.Denied) != 0 {
					t.Errorf("with %s: stdout %q, want %q, nothing denied; network %+v; stderr %q", c.what, res.Stdout, want, res.Network, res.Stderr)
				}
			}
		})
	}
	assertClean(t)
}

// wantDenied fails the test unless res's network report records dest
// refused for reason.
func wantDenied(t *testing.T, res result, dest, reason string) {
	t.Helper()
	if res.Network != nil {
		for _, d := range res.Network.Denied {
			if d.Destination == dest && d.Reason == reason {
				return
			}
		}
	}
	t.Errorf("network report %+v, want %s refused: %s", res.Network, dest, reason)
}

// TestEgressBadInput: malformed allowlists are refused up front, exit
// 125, one line, nothing made.
func TestEgressBadInput(t *testing.T) {
	for _, bad := range []string{"exa mple.com", "a.*.example.com", "example.com:70000", "example.com:0", "*", "10.0.0.0/33"} {
		r := boxer(t, nil, "run", "--allow-host", bad, "--lang", "python", "-c", "print(1)")
		if r.code != 125 || !strings.HasPrefix(r.stderr, "boxer: --allow-host ") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("--allow-host %q: exit %d, stderr %q, want 125 and one line naming --allow-host", bad, r.code, r.stderr)
		}
	}
	r := boxer(t, nil, "--net-range", "10.0.0.0/31", "run", "--allow-host", "web.test", "--lang", "python", "-c", "print(1)")
	if r.code != 125 || !strings.Contains(r.stderr, "egress range") {
		t.Errorf("bad --net-range: exit %d, stderr %q", r.code, r.stderr)
	}
	// A range that clashes with a route of the host's is refused, naming it.
	routes, err := nlretry.Dump(func() ([]netlink.Route, error) { return netlink.RouteList(nil, netlink.FAMILY_V4) })
	must(t, err)
	for _, rt := range routes {
		if rt.Dst == nil || strings.HasPrefix(rt.Dst.String(), "127.") {
			continue
		}
		if ones, _ := rt.Dst.Mask.Size(); ones < 8 || ones > 28 {
			continue
		}
		r := boxer(t, nil, "--net-range", rt.Dst.String(), "run", "--allow-host", "web.test", "--lang", "python", "-c", "print(1)")
		if r.code != 125 || !strings.Contains(r.stderr, "overlaps the host's route to "+rt.Dst.String()) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("--net-range %s (a host route): exit %d, stderr %q", rt.Dst, r.code, r.stderr)
		}
		break
	}
	assertClean(t)
}

// assertNoLinks checks that no sandbox of this test run left a lease, and
// that every interface and table of boxer's on the host has a lease (other
// boxers, such as the egress package's tests, may hold some meanwhile).
func assertNoLinks(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(egress.LeaseDir)
	held := map[string]bool{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(egress.LeaseDir, e.Name()))
		if err != nil || e.Name() == ".lock" {
			continue
		}
		held[e.Name()] = true
		if strings.HasPrefix(string(data), stateDir) {
			t.Errorf("address lease %s of %s left behind", e.Name(), data)
		}
	}
	links, err := nlretry.Dump(netlink.LinkList)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if n, ok := strings.CutPrefix(l.Attrs().Name, "bxn"); ok && !held[n] {
			t.Errorf("interface %s left behind", l.Attrs().Name)
		}
	}
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range ts {
		if n, ok := strings.CutPrefix(tb.Name, "boxer_"); ok && !held[n] {
			t.Errorf("nftables table %s left behind", tb.Name)
		}
	}
}

// TestEgressLeftovers: a run with egress leaves nothing after a timeout,
// and after SIGKILL of its boxer the next run reaps its link too.
func TestEgressLeftovers(t *testing.T) {
	n := internet(t)
	// The program sends its first bytes: the proxy learns what a
	// connection wants from them, and only then dials upstream (and
	// counts the connection), which must not race the timeout's teardown.
	for _, rt := range runtimes {
		res, r := netRun(t, n, "--runtime", rt, "--allow-host", "web.test:7000", "--timeout", "5s", "--lang", "python", "-c", `
import socket, time
s = socket.create_connection(("web.test", 7000), timeout=5)
s.sendall(b"hi")
time.sleep(60)`)
		if res.Status != "timeout" || res.Network == nil || res.Network.Connections != 1 {
			t.Errorf("%s: status %s, network %+v; stderr %s", rt, res.Status, res.Network, r.stderr)
		}
		assertClean(t)
	}
	cmd := exec.Command(boxerBin, "--namespace", namespace, "run", "--allow-host", "web.test", "--lang", "python", "-c", "import time; time.sleep(60)")
	cmd.Env = append(append([]string{}, testEnv...), egressEnv(n)...)
	must(t, cmd.Start())
	waitForTask(t)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if r := boxer(t, nil, "run", "--lang", "python", "-c", "print('next')"); r.stdout != "next\n" {
		t.Errorf("next run: %q %q", r.stdout, r.stderr)
	}
	assertClean(t)
}

// TestServeEgressPolicy: a server gives network only within its operator's
// allowlist (403 naming allow_hosts otherwise, and for any request when it
// has none); the result and the audit log carry the network report; a warm
// sandbox without network never serves a request with it, nor the reverse.
func TestServeEgressPolicy(t *testing.T) {
	internet(t)
	none := startServer(t)
	code, _, body := none.post(t, `{"lang":"python","code":"print(1)","allow_hosts":["web.test"]}`)
	if code != 403 || !strings.Contains(string(body), `"field":"allow_hosts"`) {
		t.Errorf("server without --allow-host: %d %s, want 403 naming allow_hosts", code, body)
	}
	s := startServer(t, "--allow-host", "web.test:443,7000", "--warm", "python,python:net", "--warm-size", "1", "--concurrency", "1")
	code, _, body = s.post(t, `{"lang":"python","code":"print(1)","allow_hosts":["other.test"]}`)
	if code != 403 || !strings.Contains(string(body), `"field":"allow_hosts"`) || !strings.Contains(string(body), "other.test") {
		t.Errorf("outside the operator's list: %d %s, want 403 naming allow_hosts and the entry", code, body)
	}
	probe := `import socket\ntry:\n    s = socket.create_connection((\"web.test\", 7000), timeout=5); s.sendall(b\"hi\"); print(s.makefile(\"rb\").read(2).decode())\nexcept OSError as e:\n    print(\"no network\", type(e).__name__)\nprint(\"eth0\" in open(\"/proc/net/dev\").read())`
	for i := 0; i < 2; i++ {
		code, _, body = s.post(t, `{"lang":"python","code":"`+probe+`","allow_hosts":["web.test:7000"]}`)
		var res result
		if err := json.Unmarshal(body, &res); err != nil || code != 200 || res.Stdout != "hi\nTrue\n" || res.Network == nil || res.Network.Connections != 1 {
			t.Errorf("with egress: %d %s", code, body)
		}
		code, _, body = s.post(t, `{"lang":"python","code":"`+probe+`"}`)
		res = result{}
		if err := json.Unmarshal(body, &res); err != nil || code != 200 || res.Stdout != "no network gaierror\nFalse\n" || res.Network != nil {
			t.Errorf("without egress: %d %s", code, body)
		}
	}
	audit, err := os.ReadFile(s.audit)
	must(t, err)
	if !strings.Contains(string(audit), `"network":{"allowed":["web.test:7000"],"connections":1`) {
		t.Errorf("audit log has no network report:\n%s", audit)
	}
}
