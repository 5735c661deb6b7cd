// Package fleet lets any boxer server of a fleet answer for a session held
// by another: a session's ID names the node that holds it, in a form only
// the fleet's servers can make or check, and a request that reaches a
// server not holding its session is forwarded once to the one that does.
//
// A session lives in one node's containerd, not in a boxer process: it
// outlives a restart of the node's server pod, and dies with the node. So
// an ID names the node (Kubernetes' node name), not the pod or its
// address. Peers are found through the fleet's headless Service in DNS
// (its SRV records give each pod's address and port), and each peer says
// which node it serves when asked (Probe). No store of its own, no
// Kubernetes API access: the pods need no token and no RBAC.
//
// Members talk to each other only on a listener of their own (the fleet
// listener), over mutual TLS with a key pair derived from the fleet key
// (identity.go): a member proves it holds the key and is the end of the
// connection, so callers' credentials never cross a hop to anyone else.
package fleet

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MinKeyLength is the shortest fleet key accepted, in bytes.
const MinKeyLength = 32

// The parts of a fleet ID after its prefix: 16 hex digits of randomness
// (as a lone server's IDs), a dash, the node's tag and the ID's MAC.
const (
	randomHex = 16
	tagHex    = 8
	macHex    = 12
)

// Errors of Locate, each with its answer to the caller.
var (
	// ErrForged: the ID is not one a server of this fleet made (404,
	// never forwarded).
	ErrForged = errors.New("no such session")
	// ErrGone: every peer answered and none serves the ID's node: the
	// node is gone, and its sessions with it (410).
	ErrGone = errors.New("the node that held this session has left the fleet, and its sessions with it: make a new session")
	// ErrUnreachable: the node's server may be there but did not answer
	// (503, retry).
	ErrUnreachable = errors.New("the node that holds this session does not answer: retry shortly")
)

// Config is a fleet member's setting.
type Config struct {
	// Key is the fleet's shared secret: it signs IDs, and the members'
	// key pair is derived from it.
	Key []byte
	// Node is the name of the node this server holds sessions on
	// (Kubernetes' spec.nodeName).
	Node string
	// Peers is the DNS name of the fleet's listeners: an SRV name
	// (_fleet._tcp.boxer-peers.boxer.svc.cluster.local) or a host name
	// whose addresses all listen on Port.
	Peers string
	// Port is the peers' fleet listener port when Peers is a host name.
	Port int
	// DNS is the resolver to ask (host:port); empty is the system's.
	DNS string
	// E2B says this server answers E2B's API, told to peers.
	E2B bool
	// Refresh is how long a peer list is used before DNS is asked again
	// (default 5 s); a lookup for a node not in it asks at once, at most
	// once a second.
	Refresh time.Duration
}

// Fleet is one member's view of the fleet.
type Fleet struct {
	cfg      Config
	tag      string
	draining atomic.Bool
	id       *identity
	// transport carries requests to other members' fleet listeners,
	// connections kept for the next.
	transport *http.Transport

	mu     sync.Mutex
	peers  []Peer
	failed int // peers listed in DNS that did not answer the last probe
	looked time.Time
	asked  time.Time
}

// New checks cfg and returns the member.
func New(cfg Config) (*Fleet, error) {
	if len(cfg.Key) < MinKeyLength {
		return nil, fmt.Errorf("the fleet key must be at least %d bytes, not %d", MinKeyLength, len(cfg.Key))
	}
	if cfg.Node == "" {
		return nil, errors.New("the fleet needs this node's name")
	}
	if cfg.Peers == "" {
		return nil, errors.New("the fleet needs the DNS name of its peers")
	}
	if !strings.HasPrefix(cfg.Peers, "_") && (cfg.Port < 1 || cfg.Port > 65535) {
		return nil, fmt.Errorf("peers %q is a host name: its port is needed", cfg.Peers)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	id, err := newIdentity(cfg.Key)
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, id: id, transport: &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     id.clientTLS(),
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
	f.tag = f.nodeTag(cfg.Node)
	return f, nil
}

// Node is this member's node name.
func (f *Fleet) Node() string { return f.cfg.Node }

// mac is HMAC-SHA256 under the fleet key of the parts, each ended by a
// zero byte so that no two lists of parts sign alike.
func (f *Fleet) mac(parts ...string) []byte {
	h := hmac.New(sha256.New, f.cfg.Key)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// nodeTag is a node's name as IDs carry it: opaque to callers, the same on
// every member.
func (f *Fleet) nodeTag(node string) string {
	return hex.EncodeToString(f.mac("node", node))[:tagHex]
}

// NewID makes an ID for a session held here: prefix, 16 random hex digits,
// a dash, this node's tag and a MAC of all of it.
func (f *Fleet) NewID(prefix string) string {
	b := make([]byte, randomHex/2)
	_, _ = rand.Read(b)
	body := prefix + hex.EncodeToString(b) + "-" + f.tag
	return body + hex.EncodeToString(f.mac("id", body))[:macHex]
}

// parse checks id's MAC and returns the tag of its node.
func (f *Fleet) parse(id string) (tag string, ok bool) {
	dash := strings.LastIndexByte(id, '-')
	if dash < 0 || len(id)-dash-1 != tagHex+macHex || dash < randomHex {
		return "", false
	}
	if _, err := hex.DecodeString(id[dash+1:]); err != nil {
		return "", false
	}
	body, sum := id[:len(id)-macHex], id[len(id)-macHex:]
	want := hex.EncodeToString(f.mac("id", body))[:macHex]
	if !hmac.Equal([]byte(sum), []byte(want)) {
		return "", false
	}
	return id[dash+1 : dash+1+tagHex], true
}

// Place is where a session is held: here, or at a peer.
type Place struct {
	Local bool
	Peer  Peer
}
