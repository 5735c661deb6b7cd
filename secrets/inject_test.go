package secrets

import (
	"strings"
	"testing"
)

func TestParseInjection(t *testing.T) {
	tests := []struct {
		in     string
		host   string
		header string
		names  []string
	}{
		{in: "api.example.com:Authorization=Bearer {{secret:API_KEY}}", host: "api.example.com", header: "Authorization", names: []string{"API_KEY"}},
		{in: "API.Example.COM.:x-api-key={{secret:K}}", host: "api.example.com", header: "X-Api-Key", names: []string{"K"}},
		{in: "a-1.b.io:X-Auth=k={{secret:K}};v=1", host: "a-1.b.io", header: "X-Auth", names: []string{"K"}},
		{in: "registry.npmjs.org:authorization=Basic {{secret:U}}:{{secret:P}}", host: "registry.npmjs.org", header: "Authorization", names: []string{"U", "P"}},
		{in: "x.y:Cookie=session={{secret:S}}", host: "x.y", header: "Cookie", names: []string{"S"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseInjection(tc.in)
			if err != nil {
				t.Fatalf("ParseInjection(%q): %v", tc.in, err)
			}
			if got.Text != tc.in || got.Host != tc.host || got.Header != tc.header || strings.Join(got.Template.Names(), ",") != strings.Join(tc.names, ",") {
				t.Errorf("ParseInjection(%q) = %q %q %q %q, want %q %q %q %q", tc.in,
					got.Text, got.Host, got.Header, got.Template.Names(), tc.in, tc.host, tc.header, tc.names)
			}
		})
	}
}

func TestParseInjectionErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
		hidden  string // must not appear in the message
	}{
		{in: "", wantErr: `--inject "…": give HOST:HEADER=TEMPLATE`},
		{in: "api.example.com", wantErr: `--inject "api.example.com": give HOST:HEADER=TEMPLATE`},
		{in: "sk-pasted-value", wantErr: `--inject "…"`, hidden: "sk-pasted"},
		{in: "api.example.com:Authorization", wantErr: "give HOST:HEADER=TEMPLATE"},
		{in: "api.example.com:Authorization: Bearer sk-abc", wantErr: `--inject "api.example.com:…": give HOST:HEADER=TEMPLATE`, hidden: "sk-abc"},
		{in: "api.example.com:Authorization: Basic dXNlcjpwYXNz=", wantErr: "the header name is not valid", hidden: "dXNlcjpwYXNz"},
		{in: "api.example.com:Authorization=Bearer sk-abc", wantErr: `--inject "api.example.com:Authorization=…": the template names no secret`, hidden: "sk-abc"},
		{in: "api.example.com:Authorization=Bearer {{secret:K}", wantErr: "does not start a {{secret:NAME}}"},
		{in: ":Authorization={{secret:K}}", wantErr: "no host before ':'"},
		{in: "*.example.com:Authorization={{secret:K}}", wantErr: "a wildcard is not allowed"},
		{in: "api.*.com:Authorization={{secret:K}}", wantErr: "a wildcard is not allowed"},
		{in: "192.0.2.1:Authorization={{secret:K}}", wantErr: "an address is not allowed"},
		{in: "[2001:db8::1]:Authorization={{secret:K}}", wantErr: "an address is not allowed"},
		{in: "1.2.3.256:Authorization={{secret:K}}", wantErr: "ends in a number"},
		{in: "api.example.com:8443:Authorization={{secret:K}}", wantErr: "give the host without a port"},
		{in: "localhost:Authorization={{secret:K}}", wantErr: "the host name has no dot"},
		{in: "-a.example.com:Authorization={{secret:K}}", wantErr: "the host name is not valid"},
		{in: "a_b.example.com:Authorization={{secret:K}}", wantErr: "the host name is not valid"},
		{in: "a..example.com:Authorization={{secret:K}}", wantErr: "the host name is not valid"},
		{in: strings.Repeat("a", 64) + ".com:Authorization={{secret:K}}", wantErr: "the host name is not valid"},
		{in: strings.Repeat("abcdefghi.", 26) + "com:Authorization={{secret:K}}", wantErr: "longer than 253"},
		{in: "api.example.com:={{secret:K}}", wantErr: "no header before '='"},
		{in: "api.example.com:X Auth={{secret:K}}", wantErr: "the header name is not valid"},
		{in: "api.example.com:X-Auth(1)={{secret:K}}", wantErr: "the header name is not valid"},
		{in: "api.example.com:host={{secret:K}}", wantErr: "header Host is not one a rule may set"},
		{in: "api.example.com:Content-Length={{secret:K}}", wantErr: "header Content-Length is not one"},
		{in: "api.example.com:transfer-encoding={{secret:K}}", wantErr: "header Transfer-Encoding"},
		{in: "api.example.com:Connection={{secret:K}}", wantErr: "header Connection"},
		{in: "api.example.com:Keep-Alive={{secret:K}}", wantErr: "header Keep-Alive"},
		{in: "api.example.com:TE={{secret:K}}", wantErr: "header Te"},
		{in: "api.example.com:Trailer={{secret:K}}", wantErr: "header Trailer"},
		{in: "api.example.com:Upgrade={{secret:K}}", wantErr: "header Upgrade"},
		{in: "api.example.com:Expect={{secret:K}}", wantErr: "header Expect"},
		{in: "api.example.com:proxy-authorization={{secret:K}}", wantErr: "header Proxy-Authorization"},
		{in: "api.example.com:Proxy-Anything={{secret:K}}", wantErr: "header Proxy-Anything"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseInjection(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseInjection(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			if tc.hidden != "" && strings.Contains(err.Error(), tc.hidden) {
				t.Errorf("ParseInjection(%q) = %q: repeats %q", tc.in, err, tc.hidden)
			}
		})
	}
}

func TestParseInjectionMessage(t *testing.T) {
	_, err := ParseInjection("api.example.com:Host=Bearer {{secret:API_KEY}}")
	want := `--inject "api.example.com:Host=Bearer {{secret:API_KEY}}": header Host is not one a rule may set (it frames the request or steers the connection): inject a header such as Authorization`
	if err == nil || err.Error() != want {
		t.Errorf("ParseInjection = %v, want %q", err, want)
	}
}
