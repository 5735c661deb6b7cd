package e2b

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestWireLimits sends the listener bodies over --max-body and long
// names, without a sandbox behind it: each is refused before anything
// reads it whole, by a short answer naming the limit.
func TestWireLimits(t *testing.T) {
	const key = "e2b_00112233445566778899aabbccddeeff"
	s, err := New(nil, Config{Keys: []string{key}, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s.boxes["sb1"] = &sandbox{ID: "sb1", Caller: Caller(key), EnvdToken: "tok"}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	big := func(prefix string, n int) io.Reader {
		return io.MultiReader(strings.NewReader(prefix), strings.NewReader(strings.Repeat("a", n)), strings.NewReader(`"}`))
	}
	tests := []struct {
		name, path string
		port       int // 0: the control plane
		body       io.Reader
		code       int
		contains   []string
	}{
		{"Stat over the cap", "/filesystem.Filesystem/Stat", EnvdPort, big(`{"path":"/workspace/`, 64<<20), http.StatusTooManyRequests, []string{"resource_exhausted", "1048576"}},
		{"Stat of a long path outside", "/filesystem.Filesystem/Stat", EnvdPort, big(`{"path":"/etc/`, 900<<10), http.StatusForbidden, []string{"permission_denied", "/etc/aaa", "bytes)"}},
		{"execute over the cap", "/execute", InterpreterPort, big(`{"code":"`, 2<<20), http.StatusRequestEntityTooLarge, []string{"1048576", "--max-body"}},
		{"create over the cap", "/v2/sandboxes", 0, big(`{"templateID":"`, 2<<20), http.StatusRequestEntityTooLarge, []string{"1048576", "--max-body"}},
		{"create of a long template", "/v2/sandboxes", 0, big(`{"templateID":"`, 900<<10), http.StatusNotFound, []string{"templateID", "aaa", "bytes)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+tc.path, tc.body)
			req.Header.Set("Content-Type", "application/json")
			if tc.port != 0 {
				req.Header.Set(headerSandboxID, "sb1")
				req.Header.Set(headerSandboxPort, strconv.Itoa(tc.port))
				req.Header.Set(headerAccessToken, "tok")
			} else {
				req.Header.Set("X-API-KEY", key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Errorf("status = %d, want %d: %.200s", resp.StatusCode, tc.code, b)
			}
			for _, c := range tc.contains {
				if !strings.Contains(string(b), c) {
					t.Errorf("answer %.300s: want it to name %q", b, c)
				}
			}
			if len(b) > 2048 {
				t.Errorf("answer of %d bytes, want at most 2048", len(b))
			}
		})
	}
}
