package fleet

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// handshake runs a TLS handshake between client and server settings over
// a loopback connection: the client's error and the server's.
func handshake(client, server *tls.Config) (cerr, serr error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		_ = s.SetDeadline(time.Now().Add(10 * time.Second))
		conn := tls.Server(s, server)
		err = conn.Handshake()
		if err == nil {
			_, err = conn.Write([]byte("x"))
		}
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err, <-done
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	conn := tls.Client(c, client)
	cerr = conn.Handshake()
	if cerr == nil {
		// TLS 1.3: the server checks the client's certificate after the
		// client is done; a read hears of its refusal.
		_, cerr = io.ReadFull(conn, make([]byte, 1))
	}
	c.Close()
	return cerr, <-done
}

// Only both ends holding the fleet key complete a handshake: a client or
// a server with another key, or a client without a certificate, is
// refused by the other end.
func TestCertificateCheck(t *testing.T) {
	a, b := member(t, key, "node-a"), member(t, key, "node-b")
	stranger := member(t, "another fleet's key, 32 bytes long", "node-c")
	noCert := a.id.clientTLS()
	noCert.Certificates = nil
	tests := []struct {
		name           string
		client, server *tls.Config
		wantOK         bool
		refusedBy      string // "server" or "client"
	}{
		{"two members", a.id.clientTLS(), b.id.serverTLS(), true, ""},
		{"a member to itself", a.id.clientTLS(), a.id.serverTLS(), true, ""},
		{"a stranger's client", stranger.id.clientTLS(), b.id.serverTLS(), false, "server"},
		{"a client without a certificate", noCert, b.id.serverTLS(), false, "server"},
		{"a stranger's server", a.id.clientTLS(), stranger.id.serverTLS(), false, "client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cerr, serr := handshake(tc.client, tc.server)
			if tc.wantOK {
				if cerr != nil || serr != nil {
					t.Fatalf("handshake: client %v, server %v; want both ok", cerr, serr)
				}
				return
			}
			refuser := serr
			if tc.refusedBy == "client" {
				refuser = cerr
			}
			if refuser == nil || cerr == nil {
				t.Fatalf("handshake: client %v, server %v; want it refused by the %s", cerr, serr, tc.refusedBy)
			}
			if tc.refusedBy == "client" && !errors.Is(cerr, errNotMember) {
				t.Errorf("client error %v, want %v", cerr, errNotMember)
			}
		})
	}
}

// The key pair is the fleet key's: the same on every member, another for
// another key.
func TestIdentityDerived(t *testing.T) {
	a, b := member(t, key, "node-a"), member(t, key, "node-b")
	stranger := member(t, "another fleet's key, 32 bytes long", "node-a")
	if !a.id.public.Equal(b.id.public) {
		t.Error("two members of one fleet derived two keys")
	}
	if a.id.public.Equal(stranger.id.public) {
		t.Error("another fleet's key derived the same key pair")
	}
}

// The fleet listener answers only members, marks what they forward, takes
// the caller address they name and picks the plane; on any other handler
// the forwarded mark a caller could send means nothing.
func TestHandler(t *testing.T) {
	a, b := member(t, key, "node-a"), member(t, key, "node-b")
	type seen struct {
		plane, remote string
		forwarded     bool
		headers       http.Header
	}
	got := make(chan seen, 1)
	handler := func(plane string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- seen{plane, r.RemoteAddr, Forwarded(r), r.Header.Clone()}
		})
	}
	addr := serveFleet(t, b, handler("api"), handler("e2b"))
	client := &http.Client{Transport: a.transport}
	for _, tc := range []struct {
		plane Plane
		code  int
	}{{PlaneAPI, 200}, {PlaneE2B, 200}, {"other", 400}} {
		req, _ := http.NewRequest("GET", "https://"+addr+"/v1/sessions", nil)
		req.Header.Set(headerPlane, string(tc.plane))
		req.Header.Set(headerClient, "192.0.2.7:4242")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Fatalf("plane %q: %s, want %d", tc.plane, resp.Status, tc.code)
		}
		if tc.code != 200 {
			continue
		}
		s := <-got
		if s.plane != string(tc.plane) || s.remote != "192.0.2.7:4242" || !s.forwarded || s.headers.Get(headerPlane) != "" || s.headers.Get(headerClient) != "" {
			t.Errorf("plane %q: handler saw %+v", tc.plane, s)
		}
	}
	// A stranger's client does not get a request through.
	stranger := member(t, "another fleet's key, 32 bytes long", "node-c")
	if _, err := (&http.Client{Transport: stranger.transport}).Get("https://" + addr + ProbePath); err == nil {
		t.Error("a stranger's client was answered by the fleet listener")
	}
	// A caller's header on an ordinary listener is not the mark.
	req, _ := http.NewRequest("GET", "/v1/sessions", nil)
	req.Header.Set("Boxer-Fleet-Forwarded", "node-b")
	req.Header.Set(headerPlane, "api")
	if Forwarded(req) {
		t.Error("a request with the caller's own Boxer-Fleet-Forwarded header is taken as forwarded")
	}
	if !strings.Contains(errNotMember.Error(), "fleet key") {
		t.Errorf("errNotMember = %q: does not say what is missing", errNotMember)
	}
}
