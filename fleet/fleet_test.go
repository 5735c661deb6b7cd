package fleet

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func member(t *testing.T, key, node string) *Fleet {
	t.Helper()
	f, err := New(Config{Key: []byte(key), Node: node, Peers: "localhost", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const key = "0123456789abcdef0123456789abcdef"

func TestIDs(t *testing.T) {
	a, b := member(t, key, "node-a"), member(t, key, "node-b")
	id := a.NewID("bxs-")
	if len(id) != len("bxs-")+randomHex+1+tagHex+macHex || !strings.HasPrefix(id, "bxs-") {
		t.Fatalf("id %q", id)
	}
	if p, err := a.Locate(context.Background(), id); err != nil || !p.Local {
		t.Fatalf("a.Locate(own id) = %+v, %v", p, err)
	}
	if tag, ok := b.parse(id); !ok || tag != a.tag || tag == b.tag {
		t.Fatalf("b.parse(a's id) = %q, %v; a's tag %q, b's %q", tag, ok, a.tag, b.tag)
	}
	// Every one-character change, and another fleet's key, is forged.
	for i := range id {
		for _, c := range "0af-x" {
			if byte(c) == id[i] {
				continue
			}
			bad := id[:i] + string(c) + id[i+1:]
			if _, err := a.Locate(context.Background(), bad); !errors.Is(err, ErrForged) {
				t.Fatalf("Locate(%q) = %v, want ErrForged", bad, err)
			}
		}
	}
	other := member(t, "another fleet's key, 32 bytes long", "node-a")
	for _, bad := range []string{other.NewID("bxs-"), "bxs-0123456789abcdef", id + "0", id[:len(id)-1], ""} {
		if _, err := a.Locate(context.Background(), bad); !errors.Is(err, ErrForged) {
			t.Fatalf("Locate(%q) = %v, want ErrForged", bad, err)
		}
	}
}

func TestNewChecks(t *testing.T) {
	for _, c := range []Config{
		{Key: []byte("short"), Node: "n", Peers: "_x._tcp.p"},
		{Key: []byte(key), Peers: "_x._tcp.p"},
		{Key: []byte(key), Node: "n"},
		{Key: []byte(key), Node: "n", Peers: "host-without-port"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) took it", c)
		}
	}
}

// A probe's answer is believed only over a connection to a member holding
// the key.
func TestProbe(t *testing.T) {
	a, b := member(t, key, "node-a"), member(t, key, "node-b")
	b.cfg.E2B = true
	b.SetDraining()
	addr := serveFleet(t, b, nil, nil)
	p, err := a.probe(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Peer{Addr: addr, Tag: b.tag, Draining: true, E2B: true}); p != want {
		t.Fatalf("probe = %+v, want %+v", p, want)
	}
	stranger := member(t, "another fleet's key, 32 bytes long", "node-c")
	if _, err := a.probe(context.Background(), serveFleet(t, stranger, nil, nil)); err == nil || !strings.Contains(err.Error(), errNotMember.Error()) {
		t.Fatalf("probe of a stranger = %v, want %q", err, errNotMember)
	}
	// A plain HTTP server answering the probe path is no member either.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"node":"` + b.tag + `"}`))
	}))
	defer plain.Close()
	if _, err := a.probe(context.Background(), strings.TrimPrefix(plain.URL, "http://")); err == nil {
		t.Fatal("probe of a plain HTTP server took its answer")
	}
}

// serveFleet serves f's fleet listener with api and e2b, for the test's
// life: its address.
func serveFleet(t *testing.T, f *Fleet, api, e2b http.Handler) string {
	t.Helper()
	if api == nil {
		api = http.NotFoundHandler()
	}
	srv := httptest.NewUnstartedServer(f.Handler(api, e2b))
	srv.TLS = f.ServerTLS()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}
