package e2b

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/boxer-dev/boxer/audit"
	"github.com/boxer-dev/boxer/e2b/templates"
	"github.com/boxer-dev/boxer/internal/quote"
	"github.com/boxer-dev/boxer/reaper"
	"github.com/boxer-dev/boxer/runner"
)

// E2B's control plane (spec/openapi.yml in e2b-dev/E2B), the calls E2B's
// SDKs make: a sandbox is made, found, listed, timed, paused, resumed,
// snapshotted and killed; its metrics and logs are read. What boxer cannot
// honour (volumes, MCP gateways) is refused with a 400 naming the field,
// never accepted and ignored.

// defaultTimeout is a sandbox's life when the request names none (E2B's
// SDKs send their own default of 300 s).
const defaultTimeout = 300 * time.Second

// e2bNames are boxer's presets under E2B's template names: "base" (E2B's
// default) has bash and python, "code-interpreter-v1" python with numpy,
// pandas and matplotlib; every preset is a template under its own name.
var e2bNames = map[string]string{
	"base":                "python",
	"code-interpreter-v1": "python-data",
	"code-interpreter":    "python-data",
}

// templateOf reads a template: a preset (or E2B's name for one), or an
// image boxer has (a reference with a '/' or ':', e.g. one 'boxer image
// import' brought), run as the bash preset: commands and files work in
// any image with bash.
func templateOf(t string) (lang, image string, ok bool) {
	if l, ok := e2bNames[t]; ok {
		return l, "", true
	}
	if slices.Contains(runner.PresetNames(), t) {
		return t, "", true
	}
	if strings.ContainsAny(t, "/:") {
		return "bash", t, true
	}
	return "", "", false
}

// controlPlane serves E2B's control plane, authenticated by X-API-KEY.
func (s *Server) controlPlane() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/sandboxes", s.handleCreate)
	mux.HandleFunc("POST /sandboxes", s.handleCreate)
	mux.HandleFunc("GET /v2/sandboxes", s.handleList)
	mux.HandleFunc("GET /sandboxes", s.handleList)
	mux.HandleFunc("GET /sandboxes/{id}", s.handleGet)
	mux.HandleFunc("DELETE /sandboxes/{id}", s.handleKill)
	mux.HandleFunc("POST /sandboxes/{id}/timeout", s.handleTimeout)
	mux.HandleFunc("POST /sandboxes/{id}/pause", s.handlePause)
	mux.HandleFunc("POST /sandboxes/{id}/fork", s.handleFork)
	mux.HandleFunc("POST /sandboxes/{id}/snapshots", s.handleSnapshot)
	mux.HandleFunc("GET /snapshots", s.handleSnapshots)
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", s.handleConnect)
	// SDKs up to 2.50 connect without /v2.
	mux.HandleFunc("POST /sandboxes/{id}/connect", s.handleConnect)
	mux.HandleFunc("POST /sandboxes/{id}/resume", s.handleConnect)
	mux.HandleFunc("GET /sandboxes/{id}/metrics", s.handleMetrics)
	mux.HandleFunc("GET /sandboxes/{id}/logs", s.handleLogs)
	mux.HandleFunc("GET /v2/sandboxes/{id}/logs", s.handleLogsV2)
	mux.HandleFunc("PUT /sandboxes/{id}/network", s.handleNetwork)
	mux.HandleFunc("GET /templates/aliases/{alias}", s.handleAlias)
	mux.HandleFunc("GET /templates", s.handleTemplates)
	s.buildRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if feature := unsupportedFeature(r.URL.Path); feature != "" {
			writeError(w, http.StatusNotImplemented, fmt.Sprintf("%s %s: %s is not supported by boxer's E2B API (docs/e2b.md says what is)", r.Method, quote.Cut(r.URL.Path), feature))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s (docs/e2b.md lists boxer's E2B API)", r.Method, quote.Cut(r.URL.Path)))
	})
	return s.authenticate(mux)
}

// authenticate requires one of the keys in X-API-KEY (or, as E2B's API
// also takes, a bearer token) and hands the handler its caller.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-API-KEY")
		if got == "" {
			got, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		caller := ""
		for k, c := range s.keys {
			if subtle.ConstantTimeCompare([]byte(got), []byte(k)) == 1 {
				caller = c
			}
		}
		if caller == "" {
			writeError(w, http.StatusUnauthorized, "a valid API key is required in X-API-KEY (E2B_API_KEY for the SDKs): one of the keys in the server's --e2b-key-file")
			return
		}
		ctx := withAuditCaller(context.WithValue(r.Context(), callerKey{}, caller), r, got)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type callerKey struct{}

func callerOf(r *http.Request) string {
	c, _ := r.Context().Value(callerKey{}).(string)
	return c
}

// newSandbox is the body of POST /v2/sandboxes.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             *network          `json:"network"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
	MCP          json.RawMessage `json:"mcp"`
	VolumeMounts json.RawMessage `json:"volumeMounts"`
	IAM          json.RawMessage `json:"iam"`
}

// badField is a request boxer refuses, naming E2B's field.
type badField struct{ field, msg string }

func (e *badField) Error() string { return e.field + ": " + e.msg }

func unsupported(field, why string) error {
	return &badField{field, "is not supported by boxer: " + why}
}

// decode reads one JSON object, refusing fields E2B's API does not have.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		if isTooLarge(err) {
			writeError(w, http.StatusRequestEntityTooLarge, tooLarge(s.cfg.MaxBody))
			return false
		}
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			msg = strings.Trim(f, `"`) + ": unknown field: boxer does not support it (docs/e2b.md lists what it does)"
		} else {
			msg = "the body is not valid JSON for this call: " + msg
		}
		writeError(w, http.StatusBadRequest, msg)
		return false
	}
	return true
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var body newSandbox
	if !s.decode(w, r, &body) {
		return
	}
	sb, err := s.create(r.Context(), callerOf(r), body)
	if err != nil {
		s.refuse(w, r, audit.EventCreated, "", err)
		return
	}
	e := entry(r, audit.EventCreated, sb.ID, http.StatusCreated)
	e.Lang, e.Image = sb.Lang, sb.Image
	if len(sb.AllowHosts) > 0 {
		e.AllowHosts, e.NetBytes = sb.AllowHosts, sb.NetBytes
	}
	s.cfg.Audit.Write(e)
	writeJSON(w, http.StatusCreated, s.created(sb, s.domainOf(r)))
}

// create makes the session of a new sandbox.
func (s *Server) create(ctx context.Context, caller string, body newSandbox) (*sandbox, error) {
	s.pruneGone(ctx)
	for _, f := range []struct {
		name string
		set  bool
		why  string
	}{
		{"mcp", len(body.MCP) > 0 && string(body.MCP) != "null", "no MCP gateway runs in boxer's sandboxes"},
		{"volumeMounts", len(body.VolumeMounts) > 0 && string(body.VolumeMounts) != "null" && string(body.VolumeMounts) != "[]", "boxer has no volumes"},
		{"iam", len(body.IAM) > 0 && string(body.IAM) != "null", "boxer issues no workload identity tokens"},
		{"secure", body.Secure != nil && !*body.Secure, "every boxer sandbox needs its access token"},
	} {
		if f.set {
			return nil, unsupported(f.name, f.why)
		}
	}
	if isSnapshotID(body.TemplateID) {
		return s.createFromSnapshot(ctx, caller, body.TemplateID, body)
	}
	autoPaused := body.AutoPause != nil && *body.AutoPause
	autoResume := body.AutoResume != nil && body.AutoResume.Enabled
	if autoResume && !autoPaused {
		return nil, &badField{"autoResume", "only a sandbox that pauses at its timeout (onTimeout: 'pause') resumes by itself"}
	}
	tmpl := body.TemplateID
	if tmpl == "" {
		tmpl = "base"
	}
	lang, image, ok := templateOf(tmpl)
	own, mine := s.tmpl.View(caller, tmpl)
	if name, _, tagged := strings.Cut(tmpl, ":"); tagged && !mine {
		// A tag the caller's template has not is not found, not an
		// image reference.
		if _, has := s.tmpl.View(caller, name); has {
			return nil, &templateNotFound{tmpl}
		}
	}
	switch {
	case mine && own.Image == "":
		return nil, &badField{"templateID", fmt.Sprintf("template %q has no good build yet", tmpl)}
	case mine:
		lang, image = "bash", own.Image
	case !ok:
		return nil, &templateNotFound{tmpl}
	}
	timeout := defaultTimeout
	if body.Timeout != nil {
		if *body.Timeout <= 0 {
			return nil, &badField{"timeout", "must be a positive number of seconds"}
		}
		timeout = time.Duration(*body.Timeout) * time.Second
	}
	hosts, err := s.allowHosts(body.AllowInternetAccess, body.Network)
	if err != nil {
		return nil, err
	}
	if body.AutoPauseMemory != nil && !*body.AutoPauseMemory {
		if err := s.toDisk("autoPauseMemory", len(hosts) > 0); err != nil {
			return nil, err
		}
	}
	env := make([]string, 0, len(body.EnvVars))
	for k, v := range body.EnvVars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	// E2B has no idle timeout: a sandbox lives until its timeout, which
	// setTimeout moves.
	maxLife := s.cfg.Sessions.Lifetime
	if maxLife <= 0 {
		maxLife = runner.DefaultMaxSessionLifetime
	}
	idle := maxLife
	if s.cfg.Sessions.Idle > 0 {
		idle = min(idle, s.cfg.Sessions.Idle)
	}
	// One that pauses at its timeout lives as long as the server lets a
	// session: its own timer pauses it.
	lifetime := timeout
	if autoPaused {
		lifetime = maxLife
	}
	req := runner.SessionRequest{
		Request:  runner.Request{Lang: lang, Image: image, Env: env, Runtime: s.cfg.Runtime, AllowHosts: hosts},
		Idle:     idle,
		Lifetime: lifetime,
		Caller:   caller,
		Held:     true,
		Heir:     s.cfg.Heir,
	}
	// The figures E2B reports (cpuCount, memoryMB, diskSizeMB) are the
	// limits the session gets: the request's defaults within the caps.
	limits, err := req.Request.NormalizeWithin(s.cfg.Max)
	if err != nil {
		return nil, err
	}
	sess, err := s.runner.CreateSession(ctx, req, s.cfg.Max, s.cfg.Sessions)
	if errors.Is(err, runner.ErrImageNotFound) {
		return nil, &badField{"templateID", fmt.Sprintf("no image %q here: 'boxer image list' shows them ('boxer image import' or 'pull' brings one)", image)}
	}
	if err != nil {
		return nil, err
	}
	sb := &sandbox{
		ID: sess.ID, Caller: caller, Template: tmpl, Lang: lang,
		Env: body.EnvVars, Metadata: body.Metadata,
		Public:  s.publicTraffic(body.Network),
		Started: sess.Made, AllowHosts: hosts, Linked: len(hosts) > 0, Image: image, NetBytes: limits.NetBytes,
		CPUs: limits.CPUs, MemoryMB: limits.MemoryBytes >> 20, DiskMB: limits.TmpBytes >> 20,
	}
	sb.EnvdToken, sb.TrafficToken = s.records.tokens(sb.ID)
	if autoPaused {
		sb.auto = &autoPause{resume: autoResume}
		s.arm(sb, timeout)
	}
	s.mu.Lock()
	s.boxes[sb.ID] = sb
	s.mu.Unlock()
	if mine && own.StartCmd != "" {
		if err := s.startTemplate(ctx, sb, &own); err != nil {
			disarm(sb)
			_ = s.runner.RemoveSession(context.WithoutCancel(ctx), sb.ID, caller)
			s.forget(sb.ID)
			return nil, err
		}
	}
	s.persist(sb)
	return sb, nil
}

// domainOf is the domain answers name, from which the SDKs make a port's
// host name (getHost): --e2b-domain, else the server's own address as the
// caller reached it, never E2B's cloud (the SDKs' fallback, e2b.app).
func (s *Server) domainOf(r *http.Request) string {
	if s.cfg.Domain != "" {
		return s.cfg.Domain
	}
	return r.Host
}

// created is E2B's Sandbox: what the SDKs connect with.
func (s *Server) created(sb *sandbox, domain string) map[string]any {
	out := map[string]any{
		"templateID":         sb.Template,
		"sandboxID":          sb.ID,
		"clientID":           "boxer",
		"envdVersion":        EnvdVersion,
		"envdAccessToken":    sb.EnvdToken,
		"trafficAccessToken": sb.TrafficToken,
	}
	if domain != "" {
		out["domain"] = domain
	}
	return out
}

// find is a live sandbox of the caller: not found for another caller's,
// as for one that never was.
func (s *Server) find(ctx context.Context, caller, id string) (*sandbox, runner.Session, error) {
	sb, ok := s.lookup(id)
	if !ok || sb.Caller != caller {
		return nil, runner.Session{}, runner.ErrSessionNotFound
	}
	sessions, err := s.runner.Sessions(ctx, caller)
	if err != nil {
		return nil, runner.Session{}, err
	}
	for _, sess := range sessions {
		if sess.ID == id {
			return sb, sess, nil
		}
	}
	s.forget(id)
	return nil, runner.Session{}, runner.ErrSessionNotFound
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	delete(s.boxes, id)
	s.mu.Unlock()
	s.records.remove(id)
}

// listed is E2B's ListedSandbox (and, with network, SandboxDetail).
func (s *Server) listed(sb *sandbox, sess runner.Session, domain string) map[string]any {
	state := "running"
	if sess.Paused {
		state = "paused"
	}
	out := map[string]any{
		"templateID":  sb.Template,
		"sandboxID":   sb.ID,
		"clientID":    "boxer",
		"startedAt":   sess.Made.UTC().Format(time.RFC3339Nano),
		"endAt":       or(sb.pausesAt(), sess.ExpiresAt).UTC().Format(time.RFC3339Nano),
		"lifecycle":   sb.lifecycle(),
		"cpuCount":    sb.CPUs,
		"memoryMB":    sb.MemoryMB,
		"diskSizeMB":  sb.DiskMB,
		"metadata":    orEmpty(sb.Metadata),
		"state":       state,
		"envdVersion": EnvdVersion,
	}
	if domain != "" {
		out["domain"] = domain
	}
	return out
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sb, sess, err := s.find(r.Context(), callerOf(r), id)
	if err != nil {
		s.answerError(w, id, err)
		return
	}
	out := s.listed(sb, sess, s.domainOf(r))
	// As E2B's detail: SDKs up to 2.0 connect with the token it gives.
	out["envdAccessToken"] = sb.EnvdToken
	out["allowInternetAccess"] = len(sb.AllowHosts) > 0
	out["network"] = map[string]any{"allowOut": orNone(sb.AllowHosts), "allowPublicTraffic": sb.Public}
	writeJSON(w, http.StatusOK, out)
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sb, ok := s.lookup(id)
	if !ok || sb.Caller != callerOf(r) {
		s.answerError(w, id, runner.ErrSessionNotFound)
		return
	}
	sb.killed.Store(true)
	disarm(sb)
	err := s.runner.RemoveSession(r.Context(), id, sb.Caller)
	s.forget(id)
	if err != nil {
		s.refuse(w, r, audit.EventEnded, id, err)
		return
	}
	e := entry(r, audit.EventEnded, id, http.StatusNoContent)
	e.Reason, e.Network = reaper.EndRemoved, s.runner.EndedNetwork(id)
	s.cfg.Audit.Write(e)
	w.WriteHeader(http.StatusNoContent)
}

// answerError answers a control-plane error with E2B's status codes.
func (s *Server) answerError(w http.ResponseWriter, id string, err error) {
	var bf *badField
	var fe *runner.FieldError
	var le *runner.LimitError
	var tn *templateNotFound
	var sn *snapshotNotFound
	var te *templates.Error
	switch {
	case errors.As(err, &te):
		writeError(w, te.Code, te.Msg)
	case errors.As(err, &bf):
		writeError(w, http.StatusBadRequest, bf.Error())
	case errors.As(err, &tn):
		writeError(w, http.StatusNotFound, tn.Error())
	case errors.As(err, &sn):
		writeError(w, http.StatusNotFound, sn.Error())
	case errors.Is(err, runner.ErrSnapshotNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("snapshot %q not found", id))
	case errors.Is(err, runner.ErrSessionNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", id))
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, e2bField(fe.Field)+": "+fe.Message)
	case errors.As(err, &le):
		writeError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, runner.ErrSessionPaused), errors.Is(err, runner.ErrNotCheckpointable):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// e2bField names a runner field as E2B's API does.
func e2bField(f string) string {
	switch f {
	case runner.FieldAllowHosts:
		return "network.allowOut"
	case runner.FieldLifetime:
		return "timeout"
	case runner.FieldEnv:
		return "envVars"
	case runner.FieldLang:
		return "templateID"
	}
	return f
}
