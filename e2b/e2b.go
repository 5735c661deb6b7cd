// Package e2b speaks E2B's API on boxer's sessions, so E2B's own SDKs run
// unchanged with E2B_API_URL and E2B_SANDBOX_URL (or E2B_DOMAIN) pointed at
// boxer serve's E2B listener (docs/e2b.md).
//
// An E2B sandbox is a boxer session held by the server: its sandboxID is
// the session's ID, its owner the caller its API key names. Three planes
// share one listener:
//
//   - the control plane (POST /v2/sandboxes, GET /v2/sandboxes, ...),
//     authenticated by the X-API-KEY header;
//   - envd (port 49983: Connect-RPC process and filesystem services, HTTP
//     /files and /health), served from the host, authenticated by the
//     sandbox's X-Access-Token;
//   - the code interpreter (port 49999), served by package e2b/interp through
//     this server (interpreter.go), and any other port (proxied into the
//     sandbox), authenticated by either token.
//
// A data-plane request names its sandbox and port by the E2b-Sandbox-Id and
// E2b-Sandbox-Port headers, or by its host name <port>-<sandboxID>.<domain>.
package e2b

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/e2b/interp"
	"github.com/boxer-dev/boxer/e2b/templates"
	"github.com/boxer-dev/boxer/fleet"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/snapshots"
)

// The ports E2B's SDKs call inside a sandbox.
const (
	EnvdPort        = 49983
	InterpreterPort = 49999
)

// EnvdVersion is the envd version boxer answers as: the SDKs refuse
// anything older than 0.1.0 and turn features on by version (0.5.2
// closeStdin, 0.5.7 raw uploads, 0.6.2 file metadata, 0.6.3 watch events
// with entries, 0.6.4 network mounts: boxer refuses metadata and network
// mounts itself, with a 4xx naming them).
const EnvdVersion = "0.6.4"

// Config sets what the E2B listener accepts.
type Config struct {
	// Keys are the API keys accepted in X-API-KEY, each E2B's e2b_<hex>
	// form; each is a caller of its own (see Caller).
	Keys []string
	// Domain is the sandboxes' domain for host-name routing
	// (<port>-<sandboxID>.<domain>) and what sandboxes report as theirs;
	// empty: routing by headers only.
	Domain string
	// Max and Sessions cap what a sandbox may ask for, as for sessions.
	Max      runner.Maxima
	Sessions runner.SessionMaxima
	// DefaultNetwork is what allow_internet_access: true gets without
	// network.allowOut: DefaultNetworkNone ("" too) or
	// DefaultNetworkAllowlist (the whole Max.AllowHosts).
	DefaultNetwork string
	// PublicPorts: a sandbox whose create does not say
	// network.allowPublicTraffic has ports anyone who knows its host name
	// reaches (E2B's default); otherwise they need its traffic token.
	PublicPorts bool
	// Runtime is the runtime of sandboxes ("" is runc).
	Runtime string
	// MaxBody bounds a control-plane request body.
	MaxBody int64
	// Fleet, if set: sandboxes held by other members of the fleet are
	// answered by forwarding (see fleet.go).
	Fleet *fleet.Fleet
	// Audit gets a line per sandbox life event (audit.go); may be nil.
	Audit *audit.Log
	// Records, if set, is the directory where each sandbox's record is
	// kept for the next server on the node (records.go); Heir is then
	// the heir its session is made with (SessionRequest.Heir), which
	// that server adopts.
	Records, Heir string
	// Warn gets what goes wrong beside a request (a record not kept);
	// nil: standard error.
	Warn func(error)
	// Build, if set, builds templates (Template.build, package
	// templates): the server's image builder; nil: template builds are
	// refused (501).
	Build templates.Builder
	// BuildAllowHosts is what a template's steps may reach (the
	// operator's build allowlist); empty: no network.
	BuildAllowHosts []string
	// BuildDir holds the builds' uploads and contexts while they build;
	// empty: a temporary directory.
	BuildDir string
	// MaxSnapshots caps the snapshots one key keeps at once (each holds
	// its sandbox's memory and files on disk); 0: DefaultMaxSnapshots.
	MaxSnapshots int
	// MaxUpload bounds what one key's template files (copy's uploads)
	// take on the server at once; 0: templates.DefaultMaxUpload.
	MaxUpload int64
}

// keyForm is E2B's API key form, which the SDKs check before sending one.
var keyForm = regexp.MustCompile(`^e2b_[0-9a-f]+$`)

// CheckKey says why key cannot be an E2B API key, or nil.
func CheckKey(key string) error {
	if !keyForm.MatchString(key) {
		return fmt.Errorf("an E2B API key is e2b_ then hexadecimal digits (what E2B's SDKs accept), not %q", redact(key))
	}
	if len(key) < 4+32 {
		return fmt.Errorf("an E2B API key needs at least 32 hexadecimal digits after e2b_ (128 bits)")
	}
	return nil
}

func redact(key string) string {
	if len(key) > 8 {
		return key[:8] + "…"
	}
	return key
}

// Caller names the boxer caller an API key stands for: the same as boxer's
// HTTP API gives the key presented as a bearer token, so an operator who
// lists a key in both sees the same sessions through both.
func Caller(key string) string {
	sum := sha256.Sum256([]byte("Bearer " + key))
	return "token:" + hex.EncodeToString(sum[:8])
}

// Server serves E2B's API on a runner.
type Server struct {
	runner *runner.Runner
	cfg    Config
	// keys maps each accepted API key to its caller.
	keys map[string]string

	mu sync.Mutex
	// boxes are the sandboxes made through this server, by ID: what E2B
	// keeps beside the session (metadata, tokens, env vars).
	boxes map[string]*sandbox
	// interp serves the code interpreter and holds its contexts.
	interp *interp.Server
	// started is when the server started: its templates' age.
	started time.Time
	// records keeps the sandboxes for the next server; nil: none.
	records *records
	// pruned is when pruneGone last looked.
	pruned time.Time
	// snapMu orders the count of a key's snapshots and the making of one.
	snapMu sync.Mutex
	// tmpl holds the templates built through this server.
	tmpl *templates.Store
}

// sandbox is E2B's view of one session.
type sandbox struct {
	ID       string
	Caller   string
	Template string
	Alias    string
	// Lang is the session's preset.
	Lang string
	// Env is set for every process and the code interpreter.
	Env      map[string]string
	Metadata map[string]string
	// EnvdToken is required as X-Access-Token on envd; TrafficToken (or
	// EnvdToken) on any other port, unless Public.
	EnvdToken, TrafficToken string
	Public                  bool
	Started                 time.Time
	CPUs                    float64
	MemoryMB                int64
	DiskMB                  int64
	// AllowHosts is its allowlist (empty: no network), NetBytes its
	// byte cap.
	AllowHosts []string
	// Linked: it was made with network (a link out and its gateway),
	// which updateNetwork may cut and give back.
	Linked   bool
	NetBytes int64
	// Image is the image a template named by reference ("": the preset's).
	Image string
	// killed is set when a caller kills it, before its session ends: a
	// stream cut by that end says so (gone) rather than end as a
	// process or cell does.
	killed atomic.Bool
	// auto is set for a sandbox that pauses at its timeout
	// (api_autopause.go); paused, while a pause of this server's holds.
	auto   *autoPause
	paused atomic.Bool
	// logs keeps what its logs say of it (api_logs.go).
	logs logRing
}

// New returns a server making sandboxes on r.
func New(r *runner.Runner, cfg Config) (*Server, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	switch cfg.DefaultNetwork {
	case "":
		cfg.DefaultNetwork = DefaultNetworkNone
	case DefaultNetworkNone:
	case DefaultNetworkAllowlist:
		if len(cfg.Max.AllowHosts) == 0 {
			return nil, fmt.Errorf("the default network %q is the operator's allowlist, and there is none: give --allow-host, or the default %q", DefaultNetworkAllowlist, DefaultNetworkNone)
		}
	default:
		return nil, fmt.Errorf("the default network must be %q or %q, not %q", DefaultNetworkNone, DefaultNetworkAllowlist, cfg.DefaultNetwork)
	}
	s := &Server{runner: r, cfg: cfg, keys: map[string]string{}, boxes: map[string]*sandbox{}, started: time.Now()}
	s.interp = interp.New(interpHost{s}, interp.Config{Runner: r, Max: cfg.Max, MaxBody: cfg.MaxBody})
	tmpl, err := templates.New(templates.Config{
		Build: cfg.Build, AllowHosts: cfg.BuildAllowHosts, Dir: cfg.BuildDir, MaxUpload: cfg.MaxUpload,
		MaxCPUs: cfg.Max.CPUs, MaxMemoryBytes: cfg.Max.MemoryBytes,
		Reserved: isPreset, Preset: presetImage, Warn: func(err error) { s.cfg.Warn(err) },
		Remove: s.removeImage,
	})
	if err != nil {
		return nil, err
	}
	s.tmpl = tmpl
	for _, k := range cfg.Keys {
		if err := CheckKey(k); err != nil {
			return nil, err
		}
		s.keys[k] = Caller(k)
	}
	if cfg.Warn == nil {
		s.cfg.Warn = func(err error) { fmt.Fprintf(os.Stderr, "boxer: warning: %v\n", err) }
	}
	if cfg.Records != "" {
		rs, err := openRecords(cfg.Records)
		if err != nil {
			return nil, err
		}
		rs.writeFail = s.cfg.Warn
		s.records = rs
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := s.restore(ctx)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			fmt.Fprintf(os.Stderr, "boxer: took over %d E2B sandbox(es) a server before this one made\n", n)
		}
	}
	return s, nil
}

// removeImage removes a deleted template's image, as 'boxer image rm'
// does: refused while a sandbox runs in it.
func (s *Server) removeImage(ctx context.Context, image string) error {
	err := snapshots.Remove(ctx, s.runner.Client(), image)
	switch {
	case errors.Is(err, snapshots.ErrImageInUse):
		return fmt.Errorf("%w (%v)", templates.ErrImageInUse, err)
	case errors.Is(err, snapshots.ErrImageNotFound):
		return nil
	}
	return err
}

// persist keeps sb's record, with its code contexts, for the next server.
func (s *Server) persist(sb *sandbox) {
	if s.records == nil {
		return
	}
	s.records.save(sb, s.interp.Contexts(sb.ID))
}

// token makes a sandbox's access token.
func token() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// lookup finds a sandbox of this server by ID.
func (s *Server) lookup(id string) (*sandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.boxes[id]
	return sb, ok
}

// sandboxKey carries the data-plane target in a request's context.
type sandboxKey struct{}

// withSandbox hands a data-plane handler its authenticated sandbox.
func withSandbox(ctx context.Context, sb *sandbox) context.Context {
	return context.WithValue(ctx, sandboxKey{}, sb)
}

// sandboxFrom is the sandbox the router authenticated the request for;
// data-plane handlers are only ever called with one.
func sandboxFrom(ctx context.Context) *sandbox {
	sb, _ := ctx.Value(sandboxKey{}).(*sandbox)
	return sb
}
