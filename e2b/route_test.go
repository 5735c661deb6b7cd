package e2b

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTarget(t *testing.T) {
	for _, c := range []struct {
		host, id, port, domain string
		wantID                 string
		wantPort               int
		ok                     bool
		err                    string
	}{
		{id: "bxs-0123456789abcdef", port: "49983", wantID: "bxs-0123456789abcdef", wantPort: 49983, ok: true},
		{id: "bxs-0123456789abcdef", port: "0", err: "E2b-Sandbox-Port must be a TCP port"},
		{id: "bxs-0123456789abcdef", port: "", err: "E2b-Sandbox-Port must be a TCP port"},
		{host: "api.example.test"},
		{host: "3000-bxs-0123456789abcdef.sb.example.test:8443", domain: "sb.example.test", wantID: "bxs-0123456789abcdef", wantPort: 3000, ok: true},
		{host: "3000-BXS-0123456789ABCDEF.SB.example.test", domain: "sb.example.test", wantID: "bxs-0123456789abcdef", wantPort: 3000, ok: true},
		{host: "sb.example.test", domain: "sb.example.test"},
		{host: "api.sb.example.test:443", domain: "sb.example.test"},
		{host: "8000-bxs-01.sb.example.test:34567", domain: "sb.example.test:34567", wantID: "bxs-01", wantPort: 8000, ok: true},
		{host: "a.3000-bxs-01.sb.example.test", domain: "sb.example.test"},
		{host: "3000-bxs-01.other.test", domain: "sb.example.test"},
		{host: "x-bxs-01.sb.example.test", domain: "sb.example.test", err: `"x" is not a TCP port`},
		{host: "99999-bxs-01.sb.example.test", domain: "sb.example.test", err: `"99999" is not a TCP port`},
		{host: "3000.sb.example.test", domain: "sb.example.test", err: "a sandbox's host name is <port>-<sandboxID>"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.host != "" {
			r.Host = c.host
		}
		if c.id != "" {
			r.Header.Set(headerSandboxID, c.id)
			r.Header.Set(headerSandboxPort, c.port)
		}
		id, port, ok, err := target(r, c.domain)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil || id != c.wantID || port != c.wantPort || ok != c.ok {
			t.Errorf("%+v: got %q %d %v %v", c, id, port, ok, err)
		}
	}
}

func TestAllowed(t *testing.T) {
	sb := &sandbox{EnvdToken: "envd", TrafficToken: "traffic"}
	pub := &sandbox{EnvdToken: "envd", TrafficToken: "traffic", Public: true}
	for _, c := range []struct {
		sb              *sandbox
		port            int
		access, traffic string
		want            bool
	}{
		{sb, EnvdPort, "envd", "", true},
		{sb, EnvdPort, "", "traffic", false},
		{sb, EnvdPort, "", "", false},
		{pub, EnvdPort, "", "", false},
		{sb, InterpreterPort, "", "traffic", true},
		{sb, InterpreterPort, "envd", "", true},
		{pub, InterpreterPort, "", "", false},
		{sb, 3000, "", "", false},
		{sb, 3000, "wrong", "envd", false},
		{sb, 3000, "", "traffic", true},
		{pub, 3000, "", "", true},
		{&sandbox{}, 3000, "", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set(headerAccessToken, c.access)
		r.Header.Set(headerTrafficToken, c.traffic)
		if got := c.sb.allowed(r, c.port); got != c.want {
			t.Errorf("%+v: allowed %v", c, got)
		}
	}
}

func TestCheckKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"e2b_" + strings.Repeat("0a", 20): true,
		"e2b_" + strings.Repeat("0a", 8):  false,
		"e2b_" + strings.Repeat("0A", 20): false,
		"sk-" + strings.Repeat("0a", 20):  false,
		"":                                false,
	} {
		if err := CheckKey(key); (err == nil) != ok {
			t.Errorf("CheckKey(%q) = %v", key, err)
		}
	}
	if Caller("e2b_00") == Caller("e2b_01") || !strings.HasPrefix(Caller("e2b_00"), "token:") {
		t.Error("Caller does not tell keys apart")
	}
}
