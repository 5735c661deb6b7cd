package integration

import (
	"os"
	"testing"

	"github.com/boxer-dev/boxer/internal/fakenet"
)

// lookAlikeProgram tries look-alikes of allowed names, each folded into
// one by Unicode's lower-casing and never by DNS's, on every path, and an
// SSLv2-format ClientHello; it prints what each came to. It runs with the
// hostile programs' network helpers in front.
const lookAlikeProgram = `
def sni(target, name):
    try:
        return first_bytes(socket.create_connection((target, 443), timeout=5), hello(name.encode()))
    except OSError:
        return "refused"
def connect(target, name):
    try:
        return first_bytes(tunnel(target), hello(name.encode()))
    except OSError:
        return "refused"
def host(name):
    return ask(socket.create_connection(("kiosk.web.test", 80), timeout=5), name)
def sslv2():
    try:
        return first_bytes(socket.create_connection(("cdn.test", 443), timeout=5), sslv2_hello())
    except OSError:
        return "refused"
print(sni("pypi.test", "pyp\u0130.test"), connect("\u212Aiosk.web.test:443", "kiosk.web.test"), host("k\u0130osk.web.test"), sslv2())
`

// TestEgressLookAlikeNames: an SNI, a CONNECT target and an HTTP Host that
// are not ASCII (pypİ.test, Kiosk.web.test with the Kelvin sign) are
// refused though Unicode folds them into allowed names, and so is an
// SSLv2-format ClientHello, which names no server; each is recorded in
// the run's network report, the names escaped, and no server is reached.
// With --allow-no-sni the SSLv2 hello reaches the server.
func TestEgressLookAlikeNames(t *testing.T) {
	n := internet(t)
	lib, err := os.ReadFile("hostile/lib/net.py")
	must(t, err)
	program := string(lib) + lookAlikeProgram
	allow := []string{"--allow-host", fakenet.PyPIName, "--allow-host", "kiosk.web.test:80,443", "--allow-host", fakenet.CDNName}
	const notASCII = "name is not printable ASCII: an internationalised name is sent as its xn-- A-labels"
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			pypi, web, cdn := n.Hits("203.0.113.12:443"), n.Hits("203.0.113.10:443")+n.Hits("203.0.113.10:80"), n.Hits("203.0.113.15:443")
			res, r := netRun(t, n, append(append([]string{"--runtime", rt}, allow...), "--lang", "python", "-c", program)...)
			if want := "refused refused refused refused\n"; res.Stdout != want {
				t.Errorf("stdout %q, want %q; stderr %q %s", res.Stdout, want, res.Stderr, r.stderr)
			}
			wantDenied(t, res, `pyp\u0130.test:443`, notASCII)
			wantDenied(t, res, `\u212aiosk.web.test:443`, notASCII)
			wantDenied(t, res, `k\u0130osk.web.test:80`, notASCII)
			wantDenied(t, res, "203.0.113.15:443", "SSLv2-format ClientHello, which names no server")
			if got := n.Hits("203.0.113.12:443") - pypi; got != 0 {
				t.Errorf("pypi.test's server was reached %d times, want never", got)
			}
			if got := n.Hits("203.0.113.10:443") + n.Hits("203.0.113.10:80") - web; got != 0 {
				t.Errorf("kiosk.web.test's servers were reached %d times, want never", got)
			}
			if got := n.Hits("203.0.113.15:443") - cdn; got != 0 {
				t.Errorf("cdn.test's server was reached %d times, want never", got)
			}

			// The operator's leave lets nameless TLS through, SSL 2's too.
			r = boxer(t, egressEnv(n), "--allow-no-sni", "run", "--json", "--runtime", rt, "--allow-host", fakenet.CDNName, "--lang", "python", "-c", string(lib)+"print(first_bytes(socket.create_connection((\"cdn.test\", 443), timeout=5), sslv2_hello()))")
			var res2 result
			if err := jsonUnmarshal(r.stdout, &res2); err != nil {
				t.Fatalf("--allow-no-sni: bad JSON (%v): %q %q", err, r.stdout, r.stderr)
			}
			if res2.Stdout != "reached\n" || res2.Network == nil || len(res2.Network.Denied) != 0 {
				t.Errorf("SSLv2 hello with --allow-no-sni: stdout %q, want reached and nothing denied; network %+v; stderr %q", res2.Stdout, res2.Network, res2.Stderr)
			}
		})
	}
	assertClean(t)
}
