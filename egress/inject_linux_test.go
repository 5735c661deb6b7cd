package egress

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/boxer-dev/boxer/internal/fakenet"
)

// TestInjectFakeInternet injects a header into requests to the fake
// internet's web.test, which echoes what it got, and refuses badcert.test,
// whose certificate no one issued.
func TestInjectFakeInternet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make the fake internet's network namespace")
	}
	n, err := fakenet.Start(t.TempDir())
	if err != nil {
		t.Fatalf("starting the fake internet: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("closing the fake internet: %v", err)
		}
	})
	dial, err := NetnsDialer(n.Netns)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	roots := caPoolPEM(n.CAPEM)
	g := startGateway(t, Config{
		Policy:      mustPolicy(t, fakenet.WebName, fakenet.BadCertName),
		UpstreamDNS: n.DNS,
		Dial:        dial,
		Inject: []Injection{
			{Host: fakenet.WebName, Header: "Authorization", Value: secretAuth},
			{Host: fakenet.BadCertName, Header: "Authorization", Value: secretAuth},
		},
		CA:    ca,
		Roots: roots,
	}, nil)
	g.resolve(fakenet.WebName)
	g.resolve(fakenet.BadCertName)

	h := dialTLS(t, g.dial(fakenet.WebAddr+":443"), fakenet.WebName, caPool(ca))
	status, header, body := h.do("GET /headers HTTP/1.1\r\nHost: web.test\r\nAuthorization: Bearer placeholder\r\nX-Mine: 1\r\n\r\n")
	if status != 200 || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /headers = %d %s %q, want 200 JSON", status, header.Get("Content-Type"), body)
	}
	noSecret(t, "web.test's echo", body)
	var echo map[string]any
	if err := json.Unmarshal([]byte(body), &echo); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
	if echo["_host"] != fakenet.WebName || echo["X-Mine"] == nil {
		t.Errorf("echo = %v, want web.test and X-Mine", echo)
	}
	got := n.Received("/headers")
	if len(got) != 1 {
		t.Fatalf("web.test received %d requests for /headers, want 1", len(got))
	}
	if auth := got[0].Values("Authorization"); len(auth) != 1 || auth[0] != secretAuth {
		// Printing the header would print the secret: say only how it is wrong.
		t.Errorf("web.test received %d Authorization values, the injected one: %v; want it alone", len(auth), len(auth) > 0 && auth[0] == secretAuth)
	}

	bad := dialTLS(t, g.dial(fakenet.BadCertAddr+":443"), fakenet.BadCertName, caPool(ca))
	status, _, body = bad.do("GET / HTTP/1.1\r\nHost: badcert.test\r\n\r\n")
	const reason = "upstream certificate not trusted: x509: certificate signed by unknown authority"
	if want := "boxer: badcert.test:443 " + reason + "\n"; status != http.StatusBadGateway || body != want {
		t.Errorf("GET https://badcert.test/ = %d %q, want 502 %q", status, body, want)
	}
	r := g.Close()
	if r.Intercepted != 1 || len(r.Denied) != 1 || r.Denied[0] != (Denial{Destination: "badcert.test:443", Reason: reason, Status: http.StatusBadGateway}) {
		t.Errorf("report = %+v, want 1 intercepted and badcert.test:443 denied with 502", r)
	}
	checkReport(t, r)
}
