package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Routing: by host names <port>-<sandboxID>.<domain> over TLS with a test
// CA (E2B_DOMAIN), and by headers (E2B_SANDBOX_URL); a port inside the
// sandbox through getHost, only with the sandbox's token unless the
// operator makes ports public (--e2b-public-ports, E2B's default) and the
// sandbox does not ask for private ones; a killed sandbox's 502 in E2B's
// words.

// e2bPortScript starts an HTTP server in the sandbox with a background
// command and fetches a file from it through boxer, as getHost names it
// (host names) or by E2B's headers (a sandbox URL).
const e2bPortScript = `
import { Sandbox } from 'e2b'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const sbx = await Sandbox.create(process.env.PRIVATE ? { network: { allowPublicTraffic: false } } : {})
await sbx.files.write('/tmp/www/hello.txt', 'hello from the sandbox')
const server = await sbx.commands.run('python3 -m http.server 8000 --directory /tmp/www', { background: true })
const byHeaders = !!process.env.E2B_SANDBOX_URL
const url = byHeaders ? process.env.E2B_SANDBOX_URL + '/hello.txt' : 'https://' + sbx.getHost(8000) + '/hello.txt'
const route = byHeaders ? { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' } : {}
let got = ''
for (let i = 0; i < 100 && !got; i++) {
	const res = await fetch(url, { headers: { ...route, 'E2b-Traffic-Access-Token': sbx.trafficAccessToken } })
	if (res.status === 200) got = await res.text()
	else await sleep(100)
}
console.log('port', got)
console.log('no token', (await fetch(url, { headers: route })).status)
console.log('wrong token', (await fetch(url, { headers: { ...route, 'E2b-Traffic-Access-Token': 'x' + sbx.trafficAccessToken } })).status)
const envd = byHeaders ? process.env.E2B_SANDBOX_URL + '/health' : 'https://' + sbx.getHost(49983) + '/health'
const envdRoute = byHeaders ? { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } : {}
console.log('envd, traffic token', (await fetch(envd, { headers: { ...envdRoute, 'E2b-Traffic-Access-Token': sbx.trafficAccessToken } })).status)
await server.kill()
await sbx.kill()
const gone = await fetch(url, { headers: route })
console.log('killed', gone.status, (await gone.json()).message)
`

// resolveScript makes every name under TEST_DOMAIN resolve to loopback in
// the node process: the test's DNS, without touching the host's.
const resolveScript = `
import dns from 'node:dns'
const lookup = dns.lookup
const domain = '.' + process.env.TEST_DOMAIN
dns.lookup = (host, opts, cb) => {
	if (typeof opts === 'function') { cb = opts; opts = {} }
	if (typeof opts === 'number') opts = { family: opts }
	if (!host.endsWith(domain)) return lookup(host, opts, cb)
	if (opts.all) return process.nextTick(cb, null, [{ address: '127.0.0.1', family: 4 }])
	return process.nextTick(cb, null, '127.0.0.1', 4)
}
`

func TestE2BRouting(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := testCA(t, dir, "*.sb.test")
	resolve := filepath.Join(dir, "resolve.mjs")
	must(t, os.WriteFile(resolve, []byte(resolveScript), 0o644))
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			e := startE2B(t, "--runtime", rt, "--e2b-domain", "sb.test:$PORT", "--tls-cert", cert, "--tls-key", key)
			port := e.api[strings.LastIndex(e.api, ":")+1:]
			want := "port hello from the sandbox\nno token 403\nwrong token 403\nenvd, traffic token 401\nkilled 502 The sandbox was not found"
			got := strings.TrimSpace(e.node(t, e.keys[0], e2bPortScript,
				"E2B_DOMAIN=sb.test:"+port, "TEST_DOMAIN=sb.test", "NODE_EXTRA_CA_CERTS="+ca, "NODE_OPTIONS=--import="+resolve))
			if got != want {
				t.Errorf("host names: got\n%s\nwant\n%s", got, want)
			}
			e.stop(t)
			assertClean(t)
		})
	}
	// By headers, without TLS.
	e := startE2B(t)
	if got, want := strings.TrimSpace(e.node(t, e.keys[0], e2bPortScript)), "port hello from the sandbox\nno token 403\nwrong token 403\nenvd, traffic token 401\nkilled 502 The sandbox was not found"; got != want {
		t.Errorf("headers: got\n%s\nwant\n%s", got, want)
	}
	e.stop(t)
	// --e2b-public-ports: E2B's default, public ports (never envd's)
	// unless the sandbox asks for private ones.
	e = startE2B(t, "--e2b-public-ports")
	if got, want := strings.TrimSpace(e.node(t, e.keys[0], e2bPortScript)), "port hello from the sandbox\nno token 200\nwrong token 200\nenvd, traffic token 401\nkilled 502 The sandbox was not found"; got != want {
		t.Errorf("public ports: got\n%s\nwant\n%s", got, want)
	}
	if got, want := strings.TrimSpace(e.node(t, e.keys[0], e2bPortScript, "PRIVATE=1")), "port hello from the sandbox\nno token 403\nwrong token 403\nenvd, traffic token 401\nkilled 502 The sandbox was not found"; got != want {
		t.Errorf("public ports, a private sandbox: got\n%s\nwant\n%s", got, want)
	}
	e.stop(t)
	assertClean(t)
}

// testCA writes a test CA and a certificate it signs for name; it returns
// the files of the CA's certificate, the leaf's chain and its key.
func testCA(t *testing.T, dir, name string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "boxer test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	must(t, err)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caCert, &leafKey.PublicKey, caKey)
	must(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	must(t, err)
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644))
	must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o644))
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return caFile, certFile, keyFile
}
